/* Trace collector target: longjmp out of c() <- b() <- a() back to outer(),
   which then calls after(); and a signal handler that calls in_handler(). */
#include <setjmp.h>
#include <signal.h>
static jmp_buf env;
void c(void)
{
	longjmp(env, 1);
}
void b(void)
{
	c();
}
void a(void)
{
	b();
}
void after(void)
{
	__asm__ volatile("");
}
void outer(void)
{
	if (setjmp(env) == 0)
		a();
	after();
}
void in_handler(void)
{
	__asm__ volatile("");
}
void handler(int sig)
{
	(void)sig;
	in_handler();
}
int main(void)
{
	outer();
	signal(SIGUSR1, handler);
	for (int i = 0; i < 3; i++)
		raise(SIGUSR1);
	return 0;
}
