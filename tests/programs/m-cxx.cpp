// m-cxx.cpp - C++ new and delete: 5 objects deleted, 1 leaked, one array.
#include <vector>

struct Obj {
	long v[6]; // 48 B
};

static Obj *keep;

int main()
{
	for (int i = 0; i < 5; i++)
		delete new Obj(); // NEW-LOOP
	keep = new Obj(); // NEW-LEAK
	int *a = new int[25]; // NEW-ARRAY: 100 B
	delete[] a;
	std::vector<int> v(64); // VECTOR: 256 B through std::allocator
	keep = nullptr;
	return (int)v.size() - 64;
}
