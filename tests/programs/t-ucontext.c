/*
 * t-ucontext.c - a coroutine on a stack of its own (makecontext), resumed four
 * times by swapcontext: three times it calls co_work and switches back, the
 * fourth its function returns and glibc goes on in uc_link.
 */
#include <ucontext.h>

static ucontext_t main_ctx, co_ctx;
static char co_stack[65536];
volatile int sink;

static __attribute__((noinline)) void co_work(int i)
{
	sink += i;
	swapcontext(&co_ctx, &main_ctx);
}

static __attribute__((noinline)) void co_body(void)
{
	int i;

	for (i = 0; i < 3; i++)
		co_work(i);
}

static __attribute__((noinline)) void resume(void)
{
	swapcontext(&main_ctx, &co_ctx);
}

static __attribute__((noinline)) void between(void)
{
	sink++;
}

int main(void)
{
	int i;

	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = co_stack;
	co_ctx.uc_stack.ss_size = sizeof(co_stack);
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, co_body, 0);
	for (i = 0; i < 4; i++) {
		resume();
		between();
	}
	return 0;
}
