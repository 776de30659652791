/*
 * cf-jmp.c - longjmp out of two frames, then calls from main whose frames are
 * larger and smaller than the abandoned ones': they are main's children.
 */
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

static jmp_buf env;
volatile int sink;

__attribute__((noinline)) void deep(int x)
{
	if (x > 0)
		longjmp(env, 1);
	sink++;
}

__attribute__((noinline)) void jumper(int x)
{
	sink += x;
	deep(x);
}

__attribute__((noinline)) void big_frame(int x)
{
	char big[512];

	memset(big, x, sizeof(big));
	sink += big[x];
}

__attribute__((noinline)) void small_frame(void)
{
	sink++;
}

int main(void)
{
	int i;

	for (i = 0; i < 3; i++) {
		if (setjmp(env) == 0)
			jumper(1);
		big_frame(2);
		small_frame();
	}
	return 0;
}
