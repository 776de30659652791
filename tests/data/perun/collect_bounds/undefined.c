#include <stdio.h>
#include <stdlib.h>

int undefined(unsigned int k) {
    while (k > 0) {
        k++;
    }

    return 0;
}
