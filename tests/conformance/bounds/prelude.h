/* What Perun's examples/bounds.c leaves to the file around it: the list type
 * and NONDET (its document shows the function alone). */
#include <stdlib.h>
typedef struct list_t {
	struct list_t *next;
} TList;
#define NONDET (rand() % 2)
