/*
 * t-lib.c - built twice: libt-liba.so (FN=liba_fn, INNER=liba_inner) and
 * libt-libb.so (FN=libb_fn, INNER=libb_inner).
 */
volatile int t_lib_sink;

static __attribute__((noinline)) void INNER(int i)
{
	t_lib_sink += i;
}

void FN(void);

void FN(void)
{
	INNER(1);
	INNER(2);
}
