/* Unit tests: atomic writes leave no partial file; write_new never replaces. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <sonde/file.h>

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.' || (e->d_name[1] && e->d_name[1] != '.');
	if (d)
		closedir(d);
	return n;
}

static void test_atomic_and_new(void **state)
{
	char dir[] = "/tmp/sonde-file-XXXXXX", path[128], *used = NULL, *buf;
	size_t len;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.json", dir);
	assert_int_equal(sonde_file__write_atomic(path, "one", 3), 0);
	assert_int_equal(sonde_file__write_atomic(path, "two", 3), 0);
	assert_int_equal(sonde_file__read(path, &buf, &len), 0);
	assert_string_equal(buf, "two");
	free(buf);
	assert_int_equal(sonde_file__write_new(path, "three", 5, &used), 0);
	assert_non_null(strstr(used, "/a-1.json"));
	free(used);
	assert_int_equal(entries(dir), 2);
	snprintf(path, sizeof(path), "%s/a-1.json", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/a.json", dir);
	unlink(path);
	rmdir(dir);
}

static void test_unwritable_place(void **state)
{
	/* No temporary can be created where the directory does not exist. */
	char path[] = "/proc/sonde-no-such-dir/x.json";

	assert_true(sonde_file__write_atomic(path, "x", 1) < 0);
	assert_int_equal(sonde_file__read("/nonexistent/sonde", &(char *){ NULL }, &(size_t){ 0 }),
			 -ENOENT);
}

static void test_mkdir_p(void **state)
{
	char dir[] = "/tmp/sonde-mk-XXXXXX", path[128];

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	assert_int_equal(sonde_file__mkdir_p(path, 0755), 0);
	assert_int_equal(sonde_file__mkdir_p(path, 0755), 0);
	assert_int_equal(access(path, F_OK), 0);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/a/b", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/a", dir);
	rmdir(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_atomic_and_new),
		cmocka_unit_test(test_unwritable_place),
		cmocka_unit_test(test_mkdir_p),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
