// Trace collector target: an exception thrown in thrower() crosses middle()
// and is caught in catcher(), which then calls after().
#include <stdexcept>
void thrower() { throw std::runtime_error("x"); }
void middle() { thrower(); }
void after() { asm volatile(""); }
void catcher()
{
	try {
		middle();
	} catch (const std::exception &) {
	}
	after();
}
int main()
{
	catcher();
	return 0;
}
