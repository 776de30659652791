/* empty.c - the empty program bench/time-overhead.sh runs 1000 times. */
int main(void)
{
	return 0;
}
