/* s-echo: write "out LINE" to stdout and "err LINE" to stderr. */
#include <stdio.h>

int main(int argc, char **argv)
{
	printf("out %s\n", argc > 1 ? argv[1] : "");
	fprintf(stderr, "err %s\n", argc > 1 ? argv[1] : "");
	return 0;
}
