/*
 * t-libs.c - calls into two instrumented libraries that it finds through its
 * RUNPATH (the build directory), never through the system's directories.
 */
void liba_fn(void);
void libb_fn(void);

int main(void)
{
	liba_fn();
	libb_fn();
	libb_fn();
	return 0;
}
