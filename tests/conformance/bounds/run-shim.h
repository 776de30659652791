/* Included before Perun's bounds sources when they are run (not when they are
 * analysed): tebap.h's NONDET recurses without end, which is what Loopus needs
 * to see but no program can run. Here it is a coin toss instead. */
#define __TEBAP_H__
#include <stdlib.h>
#define NONDET (rand() % 2)
