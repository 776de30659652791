/* Calls the function FN(k) once: argv[1] is k, argv[2] the seed of NONDET. */
#include <stdlib.h>
int FN(unsigned int k);
int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	srand((unsigned)atoi(argv[2]));
	return FN((unsigned)atoi(argv[1]));
}
