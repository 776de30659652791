// cf-cxx.cpp - exceptions through frames, operator new/delete, std containers.
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

volatile int sink;

__attribute__((noinline)) void thrower(int i)
{
	if (i % 2)
		throw std::runtime_error("odd");
	sink += i;
}

__attribute__((noinline)) void middle(int i)
{
	std::string s(40, 'x'); // a heap block that the unwinding frees
	thrower(i);
	sink += (int)s.size();
}

__attribute__((noinline)) int fill(int n)
{
	std::vector<int> v;
	std::map<int, std::string> m;

	for (int i = 0; i < n; i++) {
		v.push_back(i);
		m[i] = std::string(32, (char)('a' + i % 26));
	}
	return (int)(v.size() + m.size());
}

int main()
{
	int caught = 0;

	for (int i = 0; i < 6; i++) {
		try {
			middle(i);
		} catch (const std::exception &) {
			caught++;
		}
	}
	sink += fill(100);
	int *leak = new int[10]; // one leak of 40 bytes
	leak[0] = caught;
	std::printf("%d %d\n", caught, leak[0]);
	return 0;
}
