/*
 * bounds.c - static loop bounds of C sources with libclang (bounds.h).
 *
 * A loop is bounded when its shape says how often it runs:
 *   for (i = A; i < B; i += k)   (<=, and counting down with > and >=)
 *   while (v > C) { ... v -= k; ... }   (and counting up with < and <=)
 * where the counter is an integer variable no other statement of the body
 * changes (nor takes the address of), the step k is a positive literal, A, B
 * and C are linear in variables the body does not change, and a while
 * loop's step is a statement of its body itself (not inside an if) with no
 * continue or goto that could skip it. Its local bound is then
 * max(0, B - A) (ceiled over k; +1 for <= and >=). Anything else is
 * unbounded: the safe answer, with the reason.
 *
 * The total bound of a loop multiplies the local bounds of its nest, each
 * enclosing counter replaced by its greatest value where it adds iterations
 * and its least where it removes them (linear.h), so it bounds the real count
 * from above. Totals are over the parameters: the function's integer
 * variables are followed statement by statement as a least and a greatest
 * value (a loop's effect: additions times how often they run, or any value
 * set inside), and an outermost loop is counted with the values it is
 * entered with. A while loop inside another whose counter the function
 * changes is bounded over the call at once (amortized): its iterations take
 * from max(0, v - C), which grows only where v grows. Its class is O(n^d), d
 * the degree of the bound. What cannot be followed is unbounded too.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sonde/bounds.h>
#include <sonde/file.h>
#include "linear.h"

#ifndef HAVE_CLANG_C

int sonde_bounds__analyse(const char *const *files, size_t n, const char *const *args, size_t nargs,
			  struct sonde_profile **out, struct sonde_strbuf *err)
{
	(void)files;
	(void)n;
	(void)args;
	(void)nargs;
	*out = NULL;
	sonde_strbuf__adds(err, "sonde was built without libclang's headers (Debian "
				"libclang-dev)");
	return -ENOTSUP;
}

#else

#include <clang-c/Index.h>

#define MAX_AS_BYTES (2ull << 30) /* the analysis's address space (its child's) */
#define MAX_SECONDS  120	  /* and its wall time */

/* ---- libclang, loaded at run time ------------------------------------------------------ */

static struct {
	void *h;
	CXIndex (*createIndex)(int, int);
	void (*disposeIndex)(CXIndex);
	CXTranslationUnit (*parse)(CXIndex, const char *, const char *const *, int,
				   struct CXUnsavedFile *, unsigned, unsigned);
	void (*disposeTU)(CXTranslationUnit);
	unsigned (*numDiagnostics)(CXTranslationUnit);
	CXDiagnostic (*getDiagnostic)(CXTranslationUnit, unsigned);
	enum CXDiagnosticSeverity (*diagSeverity)(CXDiagnostic);
	CXString (*formatDiagnostic)(CXDiagnostic, unsigned);
	void (*disposeDiagnostic)(CXDiagnostic);
	CXCursor (*tuCursor)(CXTranslationUnit);
	unsigned (*visitChildren)(CXCursor, CXCursorVisitor, CXClientData);
	enum CXCursorKind (*kind)(CXCursor);
	CXString (*spelling)(CXCursor);
	const char *(*cstr)(CXString);
	void (*disposeString)(CXString);
	CXSourceLocation (*location)(CXCursor);
	void (*spellingLocation)(CXSourceLocation, CXFile *, unsigned *, unsigned *, unsigned *);
	CXString (*fileName)(CXFile);
	int (*fromMainFile)(CXSourceLocation);
	CXSourceRange (*extent)(CXCursor);
	void (*tokenize)(CXTranslationUnit, CXSourceRange, CXToken **, unsigned *);
	CXString (*tokenSpelling)(CXTranslationUnit, CXToken);
	void (*disposeTokens)(CXTranslationUnit, CXToken *, unsigned);
	CXCursor (*referenced)(CXCursor);
	unsigned (*equal)(CXCursor, CXCursor);
	CXType (*type)(CXCursor);
	CXType (*canonical)(CXType);
	unsigned (*isDefinition)(CXCursor);
} C;

static int load_clang(struct sonde_strbuf *err)
{
	static const char *const names[] = { "libclang.so.1",	 "libclang-14.so.1",
					     "libclang-15.so.1", "libclang-16.so.1",
					     "libclang-13.so.1", "libclang-17.so.1",
					     "libclang-18.so.1", "libclang-19.so.1",
					     "libclang-20.so.1", NULL };
	size_t i;

	if (C.h)
		return 0;
	for (i = 0; names[i] && !C.h; i++)
		C.h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!C.h) {
		sonde_strbuf__adds(err, "libclang cannot be loaded (Debian libclang1-14): the "
					"bounds collector parses C with it");
		return -ENOTSUP;
	}
#define SYM(field, name)                                                                           \
	do {                                                                                       \
		*(void **)&C.field = dlsym(C.h, name);                                             \
		if (!C.field) {                                                                    \
			sonde_strbuf__addf(err, "libclang lacks %s", name);                        \
			dlclose(C.h);                                                              \
			C.h = NULL;                                                                \
			return -ENOTSUP;                                                           \
		}                                                                                  \
	} while (0)
	SYM(createIndex, "clang_createIndex");
	SYM(disposeIndex, "clang_disposeIndex");
	SYM(parse, "clang_parseTranslationUnit");
	SYM(disposeTU, "clang_disposeTranslationUnit");
	SYM(numDiagnostics, "clang_getNumDiagnostics");
	SYM(getDiagnostic, "clang_getDiagnostic");
	SYM(diagSeverity, "clang_getDiagnosticSeverity");
	SYM(formatDiagnostic, "clang_formatDiagnostic");
	SYM(disposeDiagnostic, "clang_disposeDiagnostic");
	SYM(tuCursor, "clang_getTranslationUnitCursor");
	SYM(visitChildren, "clang_visitChildren");
	SYM(kind, "clang_getCursorKind");
	SYM(spelling, "clang_getCursorSpelling");
	SYM(cstr, "clang_getCString");
	SYM(disposeString, "clang_disposeString");
	SYM(location, "clang_getCursorLocation");
	SYM(spellingLocation, "clang_getSpellingLocation");
	SYM(fileName, "clang_getFileName");
	SYM(fromMainFile, "clang_Location_isFromMainFile");
	SYM(extent, "clang_getCursorExtent");
	SYM(tokenize, "clang_tokenize");
	SYM(tokenSpelling, "clang_getTokenSpelling");
	SYM(disposeTokens, "clang_disposeTokens");
	SYM(referenced, "clang_getCursorReferenced");
	SYM(equal, "clang_equalCursors");
	SYM(type, "clang_getCursorType");
	SYM(canonical, "clang_getCanonicalType");
	SYM(isDefinition, "clang_isCursorDefinition");
#undef SYM
	return 0;
}

/* ---- cursors ----------------------------------------------------------------------------- */

#define MAX_KIDS      64

struct kids {
	CXCursor v[MAX_KIDS];
	unsigned n;
	bool more; /* past MAX_KIDS */
};

static enum CXChildVisitResult take_kid(CXCursor c, CXCursor parent, CXClientData d)
{
	struct kids *k = d;

	(void)parent;
	if (k->n < MAX_KIDS)
		k->v[k->n++] = c;
	else
		k->more = true;
	return CXChildVisit_Continue;
}

static void kids_of(CXCursor c, struct kids *k)
{
	k->n = 0;
	k->more = false;
	C.visitChildren(c, take_kid, k);
}

/* Through the wrappers libclang shows (implicit casts, parentheses). */
static CXCursor unwrap(CXCursor c)
{
	struct kids k;

	while (C.kind(c) == CXCursor_UnexposedExpr || C.kind(c) == CXCursor_ParenExpr) {
		kids_of(c, &k);
		if (k.n != 1)
			break;
		c = k.v[0];
	}
	return c;
}

static void name_of(CXCursor c, char *out, size_t size)
{
	CXString s = C.spelling(c);

	snprintf(out, size, "%s", C.cstr(s) ? C.cstr(s) : "");
	C.disposeString(s);
}

/* The tokens of a cursor's text, as strings (freed with free_tokens). */
struct toks {
	char **v;
	unsigned n;
};

static void tokens_of(CXTranslationUnit tu, CXCursor c, struct toks *t)
{
	CXToken *tk = NULL;
	unsigned n = 0, i;

	t->v = NULL;
	t->n = 0;
	C.tokenize(tu, C.extent(c), &tk, &n);
	t->v = n ? calloc(n, sizeof(*t->v)) : NULL;
	for (i = 0; t->v && i < n; i++) {
		CXString s = C.tokenSpelling(tu, tk[i]);

		t->v[t->n++] = strdup(C.cstr(s) ? C.cstr(s) : "");
		C.disposeString(s);
	}
	if (tk)
		C.disposeTokens(tu, tk, n);
}

static void free_tokens(struct toks *t)
{
	unsigned i;

	for (i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

static bool lin_of(CXTranslationUnit tu, CXCursor c, struct lin *out)
{
	struct toks t;
	bool ok;

	tokens_of(tu, c, &t);
	ok = t.n && lin_parse((const char *const *)t.v, t.n, out);
	free_tokens(&t);
	return ok;
}

/*
 * The operator of a binary or compound-assignment expression: the first token
 * after its left operand's.
 */
static void op_of(CXTranslationUnit tu, CXCursor c, char *op, size_t size)
{
	struct kids k;
	struct toks all, lhs;

	op[0] = 0;
	kids_of(c, &k);
	if (k.n != 2)
		return;
	tokens_of(tu, c, &all);
	tokens_of(tu, k.v[0], &lhs);
	if (lhs.n < all.n)
		snprintf(op, size, "%s", all.v[lhs.n]);
	free_tokens(&all);
	free_tokens(&lhs);
}

/*
 * Whether two cursors are one node of the tree: libclang's cursors for one
 * statement met on two walks need not compare equal, their extents do.
 */
static bool same_node(CXCursor a, CXCursor b)
{
	CXSourceRange x, y;

	if (C.kind(a) != C.kind(b))
		return false;
	x = C.extent(a);
	y = C.extent(b);
	return x.begin_int_data == y.begin_int_data && x.end_int_data == y.end_int_data &&
	       x.ptr_data[0] == y.ptr_data[0] && x.ptr_data[1] == y.ptr_data[1];
}

/* The variable a cursor names (a reference to a variable or parameter), or a null cursor. */
static CXCursor var_of(CXCursor c)
{
	CXCursor r;

	c = unwrap(c);
	if (C.kind(c) != CXCursor_DeclRefExpr)
		return (CXCursor){ 0 };
	r = C.referenced(c);
	return C.kind(r) == CXCursor_VarDecl || C.kind(r) == CXCursor_ParmDecl ? r
									       : (CXCursor){ 0 };
}

static bool is_null(CXCursor c)
{
	return C.kind(c) == 0 || C.kind(c) == CXCursor_InvalidFile ||
	       (C.kind(c) >= CXCursor_FirstInvalid && C.kind(c) <= CXCursor_LastInvalid);
}

static bool integer_type(CXCursor var, bool *is_unsigned)
{
	CXType t = C.canonical(C.type(var));

	*is_unsigned = t.kind == CXType_UInt || t.kind == CXType_ULong ||
		       t.kind == CXType_ULongLong || t.kind == CXType_UShort ||
		       t.kind == CXType_UChar || t.kind == CXType_Char_U;
	return *is_unsigned || t.kind == CXType_Int || t.kind == CXType_Long ||
	       t.kind == CXType_LongLong || t.kind == CXType_Short || t.kind == CXType_SChar ||
	       t.kind == CXType_Char_S;
}

/* ---- what a statement changes ----------------------------------------------------------- */

struct writes {
	CXTranslationUnit tu;
	CXCursor var; /* the variable asked about, or null: any */
	char names[64][64];
	size_t n;   /* the variables written (names), when var is null */
	bool hit;   /* var is written */
	bool jumps; /* a continue (of this loop) or a goto */
	int loops;  /* nesting of loops below the start */
};

static void wrote(struct writes *w, CXCursor target)
{
	CXCursor v = var_of(target);
	char name[64];
	size_t i;

	if (is_null(v)) {
		/* *p = ..., a[i] = ...: no variable of ours, unless through a pointer */
		return;
	}
	if (!is_null(w->var) && C.equal(v, w->var))
		w->hit = true;
	name_of(v, name, sizeof(name));
	for (i = 0; i < w->n && strcmp(w->names[i], name); i++)
		;
	if (i == w->n && w->n < 64)
		snprintf(w->names[w->n++], sizeof(w->names[0]), "%s", name);
}

static enum CXChildVisitResult find_writes(CXCursor c, CXCursor parent, CXClientData d)
{
	struct writes *w = d;
	enum CXCursorKind k = C.kind(c);
	struct kids kk;
	char op[8];

	(void)parent;
	if (k == CXCursor_BinaryOperator) {
		op_of(w->tu, c, op, sizeof(op));
		if (!strcmp(op, "=")) {
			kids_of(c, &kk);
			wrote(w, kk.v[0]);
		}
	} else if (k == CXCursor_CompoundAssignOperator) {
		kids_of(c, &kk);
		if (kk.n)
			wrote(w, kk.v[0]);
	} else if (k == CXCursor_UnaryOperator) {
		struct toks t;

		tokens_of(w->tu, c, &t);
		kids_of(c, &kk);
		/* ++v, v--, &v: the first or last token says which */
		if (t.n && kk.n == 1 &&
		    (!strcmp(t.v[0], "++") || !strcmp(t.v[0], "--") || !strcmp(t.v[0], "&") ||
		     !strcmp(t.v[t.n - 1], "++") || !strcmp(t.v[t.n - 1], "--")))
			wrote(w, kk.v[0]);
		free_tokens(&t);
	} else if (k == CXCursor_GotoStmt || k == CXCursor_IndirectGotoStmt) {
		w->jumps = true;
	} else if (k == CXCursor_ContinueStmt && !w->loops) {
		w->jumps = true;
	} else if (k == CXCursor_ForStmt || k == CXCursor_WhileStmt || k == CXCursor_DoStmt) {
		w->loops++;
		C.visitChildren(c, find_writes, w);
		w->loops--;
		return CXChildVisit_Continue;
	}
	return CXChildVisit_Recurse;
}

static void writes_in(CXTranslationUnit tu, CXCursor stmt, CXCursor var, struct writes *w)
{
	memset(w, 0, sizeof(*w));
	w->tu = tu;
	w->var = var;
	find_writes(stmt, stmt, w);
	C.visitChildren(stmt, find_writes, w);
}

static bool written(const struct writes *w, const struct lin *l)
{
	size_t i, j;

	for (i = 0; i < l->n; i++)
		for (j = 0; j < w->n; j++)
			if (!strcmp(l->var[i], w->names[j]))
				return true;
	return false;
}

/* ---- loops ------------------------------------------------------------------------------- */

struct loop {
	unsigned line, column;
	int parent; /* index of the enclosing loop, -1 */
	int top;    /* index of the outermost loop of its nest */
	const char *kind;
	CXCursor cur; /* the statement */
	bool bounded;
	char why[160];
	char counter[64];  /* a for loop's counter (enclosed loops' bounds may name it) */
	char entry[64];	   /* a while loop's: its count is in terms of its entry value */
	struct lin count;  /* iterations before the step: max(0, count) ... */
	long long step;	   /* ... ceiled over the step */
	struct lin lo, hi; /* the counter's values in the body */
	bool down;	   /* the counter counts down (v > C, v >= C) */
	bool inclusive;	   /* the comparison is <= or >= */
	struct lin limit;  /* a while loop's C */
	CXCursor step_at;  /* a while loop's step (the statement of its body) */
	/* over one call (totals) */
	int tstate; /* 0: not worked out, 1: being worked out, 2: total, 3: unbounded */
	struct lin total;
	const char *twhy;
	bool amortized; /* its total is over every entry at once (local = total) */
	bool local_ok;	/* local: an outermost loop's count over the parameters */
	struct lin local;
};

/* A variable of the function whose values are followed (an integer local or parameter). */
struct var {
	char name[64];
	bool is_unsigned;
	bool untracked; /* declared twice, or its address taken: not followed */
	bool once;	/* set in one place, outside loops: fixed for the call from there */
};

/* A term the bounds name, such as max(0, k - 1), and its polynomial degree. */
struct atom {
	char name[LIN_NAME];
	int degree;
	bool nonneg; /* never negative */
};

struct func {
	char name[128];
	unsigned line, column;
	struct loop *loops;
	size_t n, cap;
	struct writes all; /* what the function's body writes */
	struct var *vars;
	size_t nvars;
	struct atom atoms[64];
	size_t natoms;
	bool jumps; /* a goto or a label: statements need not run in order */
};

struct walk {
	CXTranslationUnit tu;
	struct func *f;
	int parent;
	int err;
};

static void unbounded(struct loop *l, const char *why)
{
	l->bounded = false;
	snprintf(l->why, sizeof(l->why), "%s", why);
}

/* The comparison seen from its other side: < is >, <= is >=. */
static void flip(char *op, size_t size)
{
	static const char *const pairs[][2] = {
		{ "<", ">" }, { "<=", ">=" }, { ">", "<" }, { ">=", "<=" }
	};
	size_t i;

	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (!strcmp(op, pairs[i][0])) {
			snprintf(op, size, "%s", pairs[i][1]);
			return;
		}
}

/* The counter's comparison: v OP e (flipped when e OP v). */
static bool comparison(CXTranslationUnit tu, CXCursor cond, CXCursor *var, char *op, size_t size,
		       struct lin *other)
{
	struct kids k;
	CXCursor a, b;

	cond = unwrap(cond);
	if (C.kind(cond) != CXCursor_BinaryOperator)
		return false;
	op_of(tu, cond, op, size);
	kids_of(cond, &k);
	if (k.n != 2)
		return false;
	a = var_of(k.v[0]);
	b = var_of(k.v[1]);
	if (!is_null(a) && lin_of(tu, k.v[1], other)) {
		*var = a;
		return true;
	}
	if (!is_null(b) && lin_of(tu, k.v[0], other)) {
		*var = b;
		flip(op, size); /* e < v is v > e */
		return true;
	}
	return false;
}

/*
 * A for loop's condition around its counter: L OP R, both linear, the counter
 * once in L - R (i + 1 < n - k is i < n - k - 1); as counter OP bound.
 */
static bool compare_counter(CXTranslationUnit tu, CXCursor cond, const char *counter, char *op,
			    size_t size, struct lin *bound)
{
	struct kids k;
	struct lin l, r, e;
	long long c;

	cond = unwrap(cond);
	if (C.kind(cond) != CXCursor_BinaryOperator)
		return false;
	op_of(tu, cond, op, size);
	kids_of(cond, &k);
	if (k.n != 2 || !lin_of(tu, k.v[0], &l) || !lin_of(tu, k.v[1], &r))
		return false;
	e = l; /* E = L - R = c * counter + F */
	if (!lin_add(&e, &r, -1))
		return false;
	c = lin_coef(&e, counter);
	if (c != 1 && c != -1)
		return false;
	{
		struct lin me = { 0 };

		me.n = 1;
		snprintf(me.var[0], sizeof(me.var[0]), "%s", counter);
		me.k[0] = c;
		lin_add(&e, &me, -1); /* F */
	}
	if (c == 1) { /* counter + F OP 0: counter OP -F */
		memset(bound, 0, sizeof(*bound));
		lin_add(bound, &e, -1);
	} else { /* F - counter OP 0: counter OP' F */
		*bound = e;
		flip(op, size);
	}
	return true;
}

/* The step of an update of var: +k, -k (k a literal), or 0 for anything else. */
static long long step_of(CXTranslationUnit tu, CXCursor s, CXCursor var)
{
	struct kids k;
	struct toks t;
	char op[8];
	long long v = 0;

	s = unwrap(s);
	kids_of(s, &k);
	if (C.kind(s) == CXCursor_UnaryOperator && k.n == 1 && !is_null(var_of(k.v[0])) &&
	    C.equal(var_of(k.v[0]), var)) {
		tokens_of(tu, s, &t);
		if (t.n && (!strcmp(t.v[0], "++") || !strcmp(t.v[t.n - 1], "++")))
			v = 1;
		else if (t.n && (!strcmp(t.v[0], "--") || !strcmp(t.v[t.n - 1], "--")))
			v = -1;
		free_tokens(&t);
	} else if (C.kind(s) == CXCursor_CompoundAssignOperator && k.n == 2 &&
		   !is_null(var_of(k.v[0])) && C.equal(var_of(k.v[0]), var)) {
		struct lin l;

		op_of(tu, s, op, sizeof(op));
		if (lin_of(tu, k.v[1], &l) && !l.n && l.c > 0)
			v = !strcmp(op, "+=") ? l.c : !strcmp(op, "-=") ? -l.c : 0;
	}
	return v;
}

/* The count and the counter's range from the comparison (v OP bound) and the start. */
static void counted(struct loop *l, const char *op, const struct lin *start,
		    const struct lin *bound, bool is_unsigned)
{
	struct lin one = { .c = 1 };

	l->inclusive = !strcmp(op, "<=") || !strcmp(op, ">=");
	if (l->step > 0 && (!strcmp(op, "<") || !strcmp(op, "<="))) {
		l->count = *bound; /* B - A (+1) */
		lin_add(&l->count, start, -1);
		l->lo = *start;
		l->hi = *bound;
		if (!strcmp(op, "<="))
			lin_add(&l->count, &one, 1);
		else
			lin_add(&l->hi, &one, -1);
	} else if (l->step < 0 && (!strcmp(op, ">") || !strcmp(op, ">="))) {
		if (is_unsigned && !strcmp(op, ">=")) {
			unbounded(l, "an unsigned counter compared with >= while counting down "
				     "can wrap around");
			return;
		}
		l->count = *start; /* A - B (+1) */
		lin_add(&l->count, bound, -1);
		l->hi = *start;
		l->lo = *bound;
		if (!strcmp(op, ">="))
			lin_add(&l->count, &one, 1);
		else
			lin_add(&l->lo, &one, 1);
		l->step = -l->step;
		l->down = true;
	} else {
		unbounded(l, "the counter moves away from its bound, or the comparison is not "
			     "<, <=, > or >=");
		return;
	}
	l->bounded = true;
}

/* The conjuncts of a condition (a && b && c): the loop ends when any is false. */
#define MAX_CONJUNCTS 8

static size_t conjuncts(CXTranslationUnit tu, CXCursor c, CXCursor *out, size_t n)
{
	struct kids k;
	char op[8];

	c = unwrap(c);
	if (C.kind(c) == CXCursor_BinaryOperator) {
		op_of(tu, c, op, sizeof(op));
		kids_of(c, &k);
		if (!strcmp(op, "&&") && k.n == 2)
			return conjuncts(tu, k.v[1], out, conjuncts(tu, k.v[0], out, n));
	}
	if (n < MAX_CONJUNCTS)
		out[n++] = c;
	return n;
}

/* A condition that changes a variable (i++ < n, (c = f()) > 0): not one to bound by. */
static bool changes(CXTranslationUnit tu, CXCursor cond)
{
	struct writes w;

	writes_in(tu, cond, (CXCursor){ 0 }, &w);
	return w.n > 0;
}

static void for_loop(CXTranslationUnit tu, CXCursor c, struct loop *l)
{
	struct kids k, d;
	CXCursor var = { 0 }, conj[MAX_CONJUNCTS];
	struct lin start, bound;
	struct writes w;
	char op[8];
	size_t nconj, i;
	bool uns, compared = false;

	kids_of(c, &k);
	if (k.n != 4) {
		unbounded(l, "a for loop without its start, condition or step");
		return;
	}
	/* the start: int i = A, or i = A */
	if (C.kind(k.v[0]) == CXCursor_DeclStmt) {
		kids_of(k.v[0], &d);
		if (d.n == 1 && C.kind(d.v[0]) == CXCursor_VarDecl) {
			struct kids init;

			var = d.v[0];
			kids_of(var, &init);
			if (!init.n || !lin_of(tu, init.v[init.n - 1], &start))
				var = (CXCursor){ 0 };
		}
	} else if (C.kind(unwrap(k.v[0])) == CXCursor_BinaryOperator) {
		op_of(tu, unwrap(k.v[0]), op, sizeof(op));
		kids_of(unwrap(k.v[0]), &d);
		if (!strcmp(op, "=") && d.n == 2 && lin_of(tu, d.v[1], &start))
			var = var_of(d.v[0]);
	}
	if (is_null(var)) {
		unbounded(l, "the start is not a counter set to a linear expression");
		return;
	}
	name_of(var, l->counter, sizeof(l->counter));
	if (!integer_type(var, &uns)) {
		unbounded(l, "the counter is not an integer");
		return;
	}
	if (changes(tu, k.v[1])) {
		unbounded(l, "the condition changes a variable");
		return;
	}
	l->step = step_of(tu, k.v[2], var);
	if (!l->step) {
		unbounded(l, "the step is not ++, --, += or -= a positive literal");
		return;
	}
	writes_in(tu, k.v[3], var, &w);
	if (w.hit) {
		unbounded(l, "the body changes the counter (or takes its address)");
		return;
	}
	/* i < n && a[i]: the first conjunct that bounds the counter bounds the loop */
	nconj = conjuncts(tu, k.v[1], conj, 0);
	for (i = 0; i < nconj; i++) {
		struct loop t = *l;

		if (!compare_counter(tu, conj[i], l->counter, op, sizeof(op), &bound))
			continue;
		if (written(&w, &bound) || lin_coef(&bound, l->counter)) {
			if (!compared)
				unbounded(l, "the body changes what the counter is compared with");
			compared = true;
			continue;
		}
		counted(&t, op, &start, &bound, uns);
		if (t.bounded) {
			*l = t;
			return;
		}
		if (!compared)
			*l = t;
		compared = true;
	}
	if (!compared)
		unbounded(l, "the condition does not compare the counter with a linear "
			     "expression");
}

/* A while loop bounded by one comparison of its condition (cond). */
static void while_by(CXTranslationUnit tu, CXCursor cond, CXCursor bodyc, struct loop *l)
{
	struct kids body;
	CXCursor var = { 0 };
	struct lin bound, start = { 0 };
	struct writes w;
	char op[8];
	unsigned i, steps = 0;
	bool uns;

	if (!comparison(tu, cond, &var, op, sizeof(op), &bound)) {
		unbounded(l, "the condition does not compare a variable with a linear "
			     "expression");
		return;
	}
	name_of(var, l->counter, sizeof(l->counter));
	if (!integer_type(var, &uns)) {
		unbounded(l, "the counter is not an integer");
		return;
	}
	if (C.kind(bodyc) != CXCursor_CompoundStmt) {
		unbounded(l, "the body is one statement");
		return;
	}
	/* exactly one step, a statement of the body itself */
	kids_of(bodyc, &body);
	for (i = 0; i < body.n; i++) {
		long long s = step_of(tu, body.v[i], var);

		if (s) {
			l->step = s;
			l->step_at = unwrap(body.v[i]);
			steps++;
		}
	}
	if (steps != 1 || body.more) {
		unbounded(l, "the counter is not stepped exactly once by a statement of the "
			     "body itself");
		return;
	}
	writes_in(tu, bodyc, var, &w);
	/* the step itself is one write; find another by asking without it */
	{
		struct writes again;
		unsigned n = 0;

		for (i = 0; i < body.n; i++) {
			if (step_of(tu, body.v[i], var))
				continue;
			writes_in(tu, body.v[i], var, &again);
			n += again.hit || again.jumps;
		}
		if (n || w.jumps) {
			unbounded(l, "the body changes the counter elsewhere, or may skip its "
				     "step (continue, goto)");
			return;
		}
	}
	if (written(&w, &bound) || lin_coef(&bound, l->counter)) {
		unbounded(l, "the body changes what the counter is compared with");
		return;
	}
	/* counted from the counter's value at the loop's entry */
	start.n = 1;
	snprintf(start.var[0], sizeof(start.var[0]), "%s", l->counter);
	start.k[0] = 1;
	l->limit = bound;
	counted(l, op, &start, &bound, uns);
	/* in terms of the entry value, under the counter's own name: not a value the
	   loops inside can be bounded by (it changes as they run) */
	snprintf(l->entry, sizeof(l->entry), "%s", l->counter);
	l->counter[0] = 0;
}

static void while_loop(CXTranslationUnit tu, CXCursor c, struct loop *l)
{
	struct kids k;
	CXCursor conj[MAX_CONJUNCTS];
	size_t nconj, i;

	kids_of(c, &k);
	if (k.n != 2) {
		unbounded(l, "the condition does not compare a variable with a linear "
			     "expression");
		return;
	}
	if (changes(tu, k.v[0])) {
		unbounded(l, "the condition changes a variable");
		return;
	}
	/* x_len > 0 && x != NULL: the first conjunct that bounds the loop */
	nconj = conjuncts(tu, k.v[0], conj, 0);
	for (i = 0; i < nconj; i++) {
		struct loop t = *l;

		while_by(tu, conj[i], k.v[1], &t);
		if (t.bounded || !i)
			*l = t;
		if (t.bounded)
			return;
	}
}

static enum CXChildVisitResult visit(CXCursor c, CXCursor parent, CXClientData d);

static void add_loop(struct walk *w, CXCursor c, const char *kind)
{
	struct func *f = w->f;
	struct loop *l;
	unsigned line, col, off;
	CXFile file;
	int me, saved;

	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		struct loop *v = realloc(f->loops, cap * sizeof(*v));

		if (!v) {
			w->err = -ENOMEM;
			return;
		}
		f->loops = v;
		f->cap = cap;
	}
	l = &f->loops[f->n];
	memset(l, 0, sizeof(*l));
	C.spellingLocation(C.location(c), &file, &line, &col, &off);
	l->line = line;
	l->column = col;
	l->parent = w->parent;
	l->top = w->parent < 0 ? (int)f->n : f->loops[w->parent].top;
	l->cur = c;
	l->kind = kind;
	if (!strcmp(kind, "for"))
		for_loop(w->tu, c, l);
	else if (!strcmp(kind, "while"))
		while_loop(w->tu, c, l);
	else
		unbounded(l, "do-while loops are not bounded by this collector");
	me = (int)f->n++;
	saved = w->parent;
	w->parent = me;
	C.visitChildren(c, visit, w);
	w->parent = saved;
}

static enum CXChildVisitResult visit(CXCursor c, CXCursor parent, CXClientData d)
{
	struct walk *w = d;

	(void)parent;
	switch (C.kind(c)) {
	case CXCursor_ForStmt:
		add_loop(w, c, "for");
		return CXChildVisit_Continue;
	case CXCursor_WhileStmt:
		add_loop(w, c, "while");
		return CXChildVisit_Continue;
	case CXCursor_DoStmt:
		add_loop(w, c, "do");
		return CXChildVisit_Continue;
	default:
		return CXChildVisit_Recurse;
	}
}

/* ---- terms and values ------------------------------------------------------------------ */

/* "max(0, E)" or "max(0, (E + k - 1) / k)": a loop's iterations. */
static void factor_text(const struct lin *count, long long step, struct sonde_strbuf *out)
{
	struct lin c = *count;

	if (step > 1) {
		struct lin k1 = { .c = step - 1 };

		lin_add(&c, &k1, 1);
		sonde_strbuf__adds(out, "max(0, (");
		lin_print(&c, out);
		sonde_strbuf__addf(out, ") / %lld)", step);
	} else {
		sonde_strbuf__adds(out, "max(0, ");
		lin_print(&c, out);
		sonde_strbuf__addch(out, ')');
	}
}

static const struct atom *atom_of(const struct func *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->natoms; i++)
		if (!strcmp(f->atoms[i].name, name))
			return &f->atoms[i];
	return NULL;
}

static const struct var *var_named(const struct func *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->nvars; i++)
		if (!strcmp(f->vars[i].name, name))
			return &f->vars[i];
	return NULL;
}

/* The index of a followed variable, or -1. */
static int var_index(const struct func *f, const char *name)
{
	const struct var *v = var_named(f, name);

	return v && !v->untracked ? (int)(v - f->vars) : -1;
}

/* Whether a term is never negative: a term named here, or an unsigned parameter. */
static bool nonneg_name(const struct func *f, const char *name)
{
	const struct var *v = var_named(f, name);

	const struct atom *a = atom_of(f, name);

	return a ? a->nonneg : v && v->is_unsigned;
}

static bool lin_nonneg(const struct func *f, const struct lin *a)
{
	size_t i;

	if (a->c < 0)
		return false;
	for (i = 0; i < a->n; i++)
		if (a->k[i] < 0 || !nonneg_name(f, a->var[i]))
			return false;
	return true;
}

/* a <= b for every value of the parameters (b - a is a sum of terms never negative). */
static bool lin_le(const struct func *f, const struct lin *a, const struct lin *b)
{
	struct lin d = *b;

	return lin_add(&d, a, -1) && lin_nonneg(f, &d);
}

static int degree_of(const struct func *f, const struct lin *a)
{
	int d = 0;
	size_t i;

	for (i = 0; i < a->n; i++) {
		const struct atom *t = atom_of(f, a->var[i]);
		int e = t ? t->degree : 1;

		if (e > d)
			d = e;
	}
	return d;
}

static void lin_one(struct lin *out, const char *name)
{
	memset(out, 0, sizeof(*out));
	out->n = 1;
	snprintf(out->var[0], sizeof(out->var[0]), "%s", name);
	out->k[0] = 1;
}

/* A term named by its text (max(0, k - 1), max(0, n) * max(0, m)), as a form. */
static bool atom(struct func *f, const char *text, int degree, bool nonneg, struct lin *out)
{
	if (strlen(text) >= LIN_NAME)
		return false;
	if (!atom_of(f, text)) {
		if (f->natoms == sizeof(f->atoms) / sizeof(f->atoms[0]))
			return false;
		snprintf(f->atoms[f->natoms].name, LIN_NAME, "%s", text);
		f->atoms[f->natoms].nonneg = nonneg;
		f->atoms[f->natoms++].degree = degree;
	}
	lin_one(out, text);
	return true;
}

/* max(0, e) ceiled over step: e itself when it is never negative. */
static bool max0(struct func *f, const struct lin *e, long long step, struct lin *out)
{
	struct sonde_strbuf t = SONDE_STRBUF_INIT;
	bool ok;

	memset(out, 0, sizeof(*out));
	if (!e->n) {
		out->c = e->c > 0 ? (e->c + step - 1) / step : 0;
		return true;
	}
	if (step == 1 && lin_nonneg(f, e)) {
		*out = *e;
		return true;
	}
	factor_text(e, step, &t);
	ok = t.buf && atom(f, t.buf, degree_of(f, e), true, out);
	sonde_strbuf__release(&t);
	return ok;
}

static void paren(const struct lin *a, struct sonde_strbuf *out)
{
	bool bare = a->n == 1 && a->k[0] == 1 && !a->c;

	if (!bare)
		sonde_strbuf__addch(out, '(');
	lin_print(a, out);
	if (!bare)
		sonde_strbuf__addch(out, ')');
}

/* a * b: a form when one is a constant, a named term otherwise. */
static bool lin_mul(struct func *f, const struct lin *a, const struct lin *b, struct lin *out)
{
	struct sonde_strbuf t = SONDE_STRBUF_INIT;
	bool ok;

	if (!a->n || !b->n) {
		*out = a->n ? *a : *b;
		lin_scale(out, a->n ? b->c : a->c);
		return true;
	}
	paren(a, &t);
	sonde_strbuf__adds(&t, " * ");
	paren(b, &t);
	ok = t.buf && atom(f, t.buf, degree_of(f, a) + degree_of(f, b),
			   lin_nonneg(f, a) && lin_nonneg(f, b), out);
	sonde_strbuf__release(&t);
	return ok;
}

/*
 * What a variable holds at a point of the function: a least and a greatest
 * value over the call's parameters (their values at the call) and named terms.
 */
struct val {
	bool lo_ok, hi_ok;
	struct lin lo, hi;
};

/*
 * e's greatest (hi) or least value where the variables hold st: each followed
 * variable by the end of its range that pushes e that way; a variable the
 * function never changes (a parameter, a global) and a named term stand for
 * themselves. False when some variable has no such value.
 */
static bool value_of(const struct func *f, const struct val *st, const struct lin *e, bool hi,
		     struct lin *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	out->c = e->c;
	for (i = 0; i < e->n; i++) {
		bool up = (e->k[i] > 0) == hi;
		int v = var_index(f, e->var[i]);
		struct lin one;

		if (v >= 0) {
			if (up ? !st[v].hi_ok : !st[v].lo_ok) {
				return false;
			}
			one = up ? st[v].hi : st[v].lo;
		} else {
			lin_one(&one, e->var[i]);
			if (!atom_of(f, e->var[i]) && written(&f->all, &one))
				return false;
		}
		lin_scale(&one, e->k[i]);
		if (!lin_add(out, &one, 1))
			return false;
	}
	return true;
}

static void val_unknown(struct val *v)
{
	v->lo_ok = v->hi_ok = false;
}

/* An unsigned variable is never below 0. */
static void val_floor(const struct func *f, size_t i, struct val *v)
{
	if (f->vars[i].is_unsigned && (!v->lo_ok || !lin_nonneg(f, &v->lo))) {
		memset(&v->lo, 0, sizeof(v->lo));
		v->lo_ok = true;
	}
}

/* The range of both (after an if: one branch or the other). */
/* max(a, b): the one that is never below the other, or a term naming both. */
static bool lin_max(struct func *f, const struct lin *a, const struct lin *b, struct lin *out)
{
	struct sonde_strbuf t = SONDE_STRBUF_INIT;
	int da = degree_of(f, a), db = degree_of(f, b);
	bool ok;

	if (lin_le(f, a, b) || lin_le(f, b, a)) {
		*out = lin_le(f, a, b) ? *b : *a;
		return true;
	}
	sonde_strbuf__adds(&t, "max(");
	lin_print(a, &t);
	sonde_strbuf__adds(&t, ", ");
	lin_print(b, &t);
	sonde_strbuf__addch(&t, ')');
	ok = t.buf && atom(f, t.buf, da > db ? da : db, lin_nonneg(f, a) || lin_nonneg(f, b), out);
	sonde_strbuf__release(&t);
	return ok;
}

/* The range of both (after an if: one branch or the other). */
static void val_join(struct func *f, struct val *a, const struct val *b)
{
	struct lin m;

	a->hi_ok = a->hi_ok && b->hi_ok && lin_max(f, &a->hi, &b->hi, &m);
	if (a->hi_ok)
		a->hi = m;
	if (a->lo_ok && b->lo_ok && lin_le(f, &b->lo, &a->lo))
		a->lo = b->lo;
	else if (!(a->lo_ok && b->lo_ok && lin_le(f, &a->lo, &b->lo)))
		a->lo_ok = false;
}

/* ---- where variables change ------------------------------------------------------------ */

enum site_kind { SITE_INC, SITE_DEC, SITE_SET, SITE_OTHER };

struct site {
	char name[64];
	enum site_kind kind;
	long long c;  /* INC, DEC: by how much */
	CXCursor rhs; /* SET: the value (null: none, as a declaration without one) */
	CXCursor at;  /* the expression */
	int loop;     /* the innermost loop around it, -1: none */
	bool addr;    /* &v: what changes it is out of sight */
};

struct sites {
	CXTranslationUnit tu;
	struct func *f;
	struct site *v;
	size_t n, cap;
	int loop;
	bool cond; /* in a loop's condition: runs once more than its body */
	int err;
};

static int loop_at(const struct func *f, CXCursor c)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (same_node(f->loops[i].cur, c))
			return (int)i;
	return -1;
}

static void site_add(struct sites *s, CXCursor target, enum site_kind kind, long long c,
		     CXCursor rhs, CXCursor at)
{
	CXCursor v = C.kind(target) == CXCursor_VarDecl ? target : var_of(target);
	struct site *x;

	if (is_null(v))
		return; /* *p = ..., a[i] = ...: not a variable */
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		struct site *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv) {
			s->err = -ENOMEM;
			return;
		}
		s->v = nv;
		s->cap = cap;
	}
	x = &s->v[s->n++];
	memset(x, 0, sizeof(*x));
	name_of(v, x->name, sizeof(x->name));
	x->kind = s->cond ? SITE_OTHER : kind;
	x->c = c;
	x->rhs = rhs;
	x->at = at;
	x->loop = s->loop;
}

static bool is_expr(CXCursor c)
{
	return C.kind(c) >= CXCursor_FirstExpr && C.kind(c) <= CXCursor_LastExpr;
}

static enum CXChildVisitResult find_sites(CXCursor c, CXCursor parent, CXClientData d);

static void sites_below(struct sites *s, CXCursor c, int loop, bool cond)
{
	int saved_loop = s->loop;
	bool saved_cond = s->cond;

	s->loop = loop;
	s->cond = cond;
	find_sites(c, c, s);
	s->loop = saved_loop;
	s->cond = saved_cond;
}

static enum CXChildVisitResult find_sites(CXCursor c, CXCursor parent, CXClientData d)
{
	struct sites *s = d;
	enum CXCursorKind k = C.kind(c);
	struct kids kk;
	char op[8];

	(void)parent;
	kids_of(c, &kk);
	if (k == CXCursor_ForStmt || k == CXCursor_WhileStmt || k == CXCursor_DoStmt) {
		int me = loop_at(s->f, c);
		unsigned i;

		/* a for loop's start runs once, outside it; a condition once per test */
		for (i = 0; i < kk.n; i++) {
			bool is_cond = (k == CXCursor_ForStmt && kk.n == 4 && i == 1) ||
				       (k == CXCursor_WhileStmt && i == 0) ||
				       (k == CXCursor_DoStmt && i == 1) ||
				       (k == CXCursor_ForStmt && kk.n != 4);

			sites_below(s, kk.v[i],
				    k == CXCursor_ForStmt && kk.n == 4 && i == 0 ? s->loop : me,
				    s->cond || is_cond);
		}
		return CXChildVisit_Continue;
	}
	if (k == CXCursor_BinaryOperator) {
		op_of(s->tu, c, op, sizeof(op));
		if (!strcmp(op, "=") && kk.n == 2)
			site_add(s, kk.v[0], SITE_SET, 0, kk.v[1], c);
	} else if (k == CXCursor_CompoundAssignOperator && kk.n == 2) {
		struct lin l;

		op_of(s->tu, c, op, sizeof(op));
		if (lin_of(s->tu, kk.v[1], &l) && !l.n && l.c > 0 &&
		    (!strcmp(op, "+=") || !strcmp(op, "-=")))
			site_add(s, kk.v[0], op[0] == '+' ? SITE_INC : SITE_DEC, l.c,
				 (CXCursor){ 0 }, c);
		else
			site_add(s, kk.v[0], SITE_OTHER, 0, (CXCursor){ 0 }, c);
	} else if (k == CXCursor_UnaryOperator && kk.n == 1) {
		struct toks t;

		tokens_of(s->tu, c, &t);
		if (t.n && (!strcmp(t.v[0], "++") || !strcmp(t.v[t.n - 1], "++")))
			site_add(s, kk.v[0], SITE_INC, 1, (CXCursor){ 0 }, c);
		else if (t.n && (!strcmp(t.v[0], "--") || !strcmp(t.v[t.n - 1], "--")))
			site_add(s, kk.v[0], SITE_DEC, 1, (CXCursor){ 0 }, c);
		else if (t.n && !strcmp(t.v[0], "&")) {
			site_add(s, kk.v[0], SITE_OTHER, 0, (CXCursor){ 0 }, c);
			if (s->n && same_node(s->v[s->n - 1].at, c))
				s->v[s->n - 1].addr = true;
		}
		free_tokens(&t);
	} else if (k == CXCursor_VarDecl) {
		CXCursor init = kk.n && is_expr(kk.v[kk.n - 1]) ? kk.v[kk.n - 1] : (CXCursor){ 0 };

		site_add(s, c, SITE_SET, 0, init, c);
	}
	C.visitChildren(c, find_sites, s);
	return CXChildVisit_Continue;
}

static void sites_of(struct sites *s, struct func *f, CXTranslationUnit tu, CXCursor c, int loop)
{
	memset(s, 0, sizeof(*s));
	s->tu = tu;
	s->f = f;
	sites_below(s, c, loop, false);
}

static bool sites_name(const struct sites *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].name, name))
			return true;
	return false;
}

static bool sites_touch(const struct sites *s, const struct lin *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		if (sites_name(s, e->var[i]))
			return true;
	return false;
}

/* Statements run in order: each change applied to st where it happens. */
static void apply_in_order(struct func *f, CXTranslationUnit tu, const struct sites *s,
			   struct val *st)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		const struct site *x = &s->v[i];
		int v = var_index(f, x->name);
		struct val nv = { 0 };
		struct lin e, one = { 0 };

		if (v < 0)
			continue;
		switch (x->kind) {
		case SITE_SET:
			if (!is_null(x->rhs) && lin_of(tu, x->rhs, &e)) {
				nv.hi_ok = value_of(f, st, &e, true, &nv.hi);
				nv.lo_ok = value_of(f, st, &e, false, &nv.lo);
			}
			if (!nv.hi_ok && !nv.lo_ok && !is_null(x->rhs) && f->vars[v].once) {
				/* size_t n = strlen(s): n for itself, as a parameter is */
				lin_one(&nv.hi, x->name);
				nv.lo = nv.hi;
				nv.lo_ok = nv.hi_ok = true;
			}
			st[v] = nv;
			break;
		case SITE_INC:
		case SITE_DEC:
			one.c = x->kind == SITE_INC ? x->c : -x->c;
			st[v].hi_ok = st[v].hi_ok && lin_add(&st[v].hi, &one, 1);
			st[v].lo_ok = st[v].lo_ok && lin_add(&st[v].lo, &one, 1);
			break;
		default:
			val_unknown(&st[v]);
		}
		val_floor(f, (size_t)v, &st[v]);
	}
}

/* ---- totals ------------------------------------------------------------------------------ */

/*
 * The loops of one outermost loop (top), entered with the variables holding
 * S, and the places in it where variables change. Every total is over one
 * entry of top, which runs at most once per call.
 */
struct nest {
	struct func *f;
	CXTranslationUnit tu;
	int top;
	const struct val *S;
	struct sites sites;
};

static bool total_get(struct nest *x, int i, struct lin *out, const char **why);

/* How often the code at a site runs over one entry of the nest. */
static bool runs(struct nest *x, const struct site *s, struct lin *out, const char **why)
{
	if (s->loop < 0) {
		memset(out, 0, sizeof(*out));
		out->c = 1;
		return true;
	}
	return total_get(x, s->loop, out, why);
}

/*
 * A loop inside the nest whose counter the nest changes (v > C, v -= s):
 * over every entry at once, each iteration takes at least 1 from max(0, v - C),
 * which starts at v's value when the nest is entered and grows only where v
 * grows: by c where the nest adds c, by max(0, e - C) where it sets v = e.
 */
static bool amortized(struct nest *x, int i, struct lin *out, const char **why)
{
	struct func *f = x->f;
	struct loop *l = &f->loops[i];
	struct lin phi, e, add, n;
	size_t k;

	if (!l->down || sites_touch(&x->sites, &l->limit)) {
		*why = "the bound depends on a variable the function changes";
		return false;
	}
	lin_one(&phi, l->entry);
	if (!lin_add(&phi, &l->limit, -1))
		goto complex;
	phi.c += l->inclusive;
	if (!value_of(f, x->S, &phi, true, &e) || !max0(f, &e, 1, out)) {
		*why = "the bound depends on a variable the function changes";
		return false;
	}
	for (k = 0; k < x->sites.n; k++) {
		const struct site *s = &x->sites.v[k];

		if (strcmp(s->name, l->entry) || same_node(s->at, l->step_at) ||
		    s->kind == SITE_DEC)
			continue;
		if (s->kind == SITE_OTHER) {
			*why = "the function changes the counter in a way its bound cannot follow";
			return false;
		}
		if (s->kind == SITE_INC) {
			memset(&add, 0, sizeof(add));
			add.c = s->c;
		} else {
			struct lin v, hi;

			if (is_null(s->rhs) || !lin_of(x->tu, s->rhs, &v) ||
			    sites_touch(&x->sites, &v) || !lin_add(&v, &l->limit, -1)) {
				*why = "the counter is set to a value its bound cannot follow";
				return false;
			}
			v.c += l->inclusive;
			if (!value_of(f, x->S, &v, true, &hi) || !max0(f, &hi, 1, &add)) {
				*why = "the counter is set to a value its bound cannot follow";
				return false;
			}
		}
		if (!runs(x, s, &n, why))
			return false;
		if (!lin_mul(f, &add, &n, &e) || !lin_add(out, &e, 1))
			goto complex;
	}
	l->amortized = true;
	return true;
complex:
	*why = "too many variables in the bound";
	return false;
}

/* One entry's count, its enclosing counters at their extremes, over the values at top's entry. */
static bool entry_count(struct nest *x, int i, struct lin *out, const char **why)
{
	const struct func *f = x->f;
	const struct loop *l = &f->loops[i];
	struct lin c = l->count;
	int e, guard;
	size_t k;

	for (guard = 0; guard < 64; guard++) {
		bool any = false;

		for (e = l->parent; e >= 0; e = f->loops[e].parent) {
			const struct loop *o = &f->loops[e];
			long long kk = o->counter[0] ? lin_coef(&c, o->counter) : 0;

			if (!kk)
				continue;
			if (!lin_subst(&c, o->counter, kk > 0 ? &o->hi : &o->lo)) {
				*why = "too many variables in the bound";
				return false;
			}
			any = true;
		}
		if (!any)
			break;
	}
	/* what the nest changes has no one value; but the top loop's own counter, at its entry */
	for (k = 0; k < c.n; k++)
		if (sites_name(&x->sites, c.var[k]) &&
		    !(i == x->top && !strcmp(c.var[k], l->entry))) {
			*why = "the bound depends on a variable the function changes";
			return false;
		}
	if (!value_of(f, x->S, &c, true, out)) {
		*why = "the bound depends on a variable the function changes";
		return false;
	}
	return true;
}

static bool total_get(struct nest *x, int i, struct lin *out, const char **why)
{
	struct func *f = x->f;
	struct loop *l = &f->loops[i];
	struct lin c, factor, up;
	bool ok;

	if (l->tstate == 2) {
		*out = l->total;
		return true;
	}
	if (l->tstate == 3 || l->tstate == 1) {
		*why = l->tstate == 3 ? l->twhy : "the bounds of its loops depend on one another";
		return false;
	}
	l->tstate = 1;
	if (!l->bounded) {
		*why = l->why;
		ok = false;
	} else if (l->entry[0] && i != x->top) {
		ok = amortized(x, i, out, why);
	} else {
		ok = entry_count(x, i, &c, why) && max0(f, &c, l->step, &factor);
		if (ok && i == x->top) {
			*out = factor;
			l->local = factor;
			l->local_ok = true;
		} else if (ok) {
			ok = total_get(x, l->parent, &up, why);
			if (!ok)
				*why = "an enclosing loop is unbounded";
			else if (!lin_mul(f, &up, &factor, out)) {
				*why = "too many variables in the bound";
				ok = false;
			}
		}
	}
	l = &f->loops[i];
	l->tstate = ok ? 2 : 3;
	if (ok)
		l->total = *out;
	else
		l->twhy = *why;
	return ok;
}

/*
 * What a variable can hold after the nest, from what it held at its entry
 * and each change inside: the greatest of its start and every value it is
 * set to, plus every addition times how often it runs (least likewise).
 */
/* Where a site's expression is among the statements of the top loop's body itself, or -1. */
static int body_index(const struct nest *x, const struct site *s)
{
	const struct loop *l = &x->f->loops[x->top];
	struct kids k, b;
	CXCursor body;
	unsigned i;

	if (s->loop != x->top)
		return -1;
	kids_of(l->cur, &k);
	if (!k.n)
		return -1;
	body = C.kind(l->cur) == CXCursor_DoStmt ? k.v[0] : k.v[k.n - 1];
	if (C.kind(body) != CXCursor_CompoundStmt)
		return -1;
	kids_of(body, &b);
	for (i = 0; i < b.n; i++)
		if (same_node(unwrap(b.v[i]), s->at))
			return (int)i;
	return -1;
}

/*
 * The only change of u is u += c, a statement of the top loop's body after
 * the statement at (index at): where at runs, u has grown by c at most once
 * per earlier iteration, c less than over every iteration.
 */
static bool added_after(const struct nest *x, const char *u, int at, long long *c)
{
	const struct site *only = NULL;
	size_t k;

	for (k = 0; k < x->sites.n; k++)
		if (!strcmp(x->sites.v[k].name, u)) {
			if (only)
				return false;
			only = &x->sites.v[k];
		}
	if (!only || only->kind != SITE_INC || body_index(x, only) <= at)
		return false;
	*c = only->c;
	return true;
}

static void nest_effect(struct nest *x, struct val *range, int v, struct val *out)
{
	struct func *f = x->f;
	const char *name = f->vars[v].name, *why;
	struct val r = x->S[v];
	struct lin plus = { 0 }, minus = { 0 }, n, e, t;
	size_t k;

	for (k = 0; k < x->sites.n; k++) {
		const struct site *s = &x->sites.v[k];
		struct val nv = { 0 };

		if (strcmp(s->name, name))
			continue;
		switch (s->kind) {
		case SITE_INC:
		case SITE_DEC:
			t = (struct lin){ .c = s->c };
			if (!runs(x, s, &n, &why) || !lin_mul(f, &t, &n, &e) ||
			    !lin_add(s->kind == SITE_INC ? &plus : &minus, &e, 1)) {
				if (s->kind == SITE_INC)
					r.hi_ok = false;
				else
					r.lo_ok = false;
			}
			break;
		case SITE_SET:
			if (!range || is_null(s->rhs) || !lin_of(x->tu, s->rhs, &e)) {
				val_unknown(&r);
				break;
			}
			{
				int at = body_index(x, s), u;
				long long c = 0;
				size_t j;
				struct lin saved[LIN_VARS];

				for (j = 0; j < e.n; j++) {
					u = var_index(f, e.var[j]);
					saved[j] = u >= 0 ? range[u].hi : (struct lin){ 0 };
					if (u >= 0 && at >= 0 && range[u].hi_ok &&
					    added_after(x, e.var[j], at, &c))
						range[u].hi.c -= c;
				}
				nv.hi_ok = value_of(f, range, &e, true, &nv.hi);
				nv.lo_ok = value_of(f, range, &e, false, &nv.lo);
				for (j = 0; j < e.n; j++)
					if ((u = var_index(f, e.var[j])) >= 0)
						range[u].hi = saved[j];
			}
			val_join(f, &r, &nv);
			break;
		default:
			val_unknown(&r);
		}
	}
	r.hi_ok = r.hi_ok && lin_add(&r.hi, &plus, 1);
	r.lo_ok = r.lo_ok && lin_add(&r.lo, &minus, -1);
	val_floor(f, (size_t)v, &r);
	*out = r;
}

static bool has_kind(const struct sites *s, const char *name, enum site_kind kind)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].name, name) && s->v[i].kind == kind)
			return true;
	return false;
}

/* An outermost loop entered with st: its nest's totals, then what it leaves in st. */
static int nest_run(struct func *f, CXTranslationUnit tu, int top, struct val *st)
{
	struct nest x = { f, tu, top, st, { 0 } };
	struct val *range, *after;
	const char *why;
	struct lin t;
	size_t i;

	sites_of(&x.sites, f, tu, f->loops[top].cur, -1);
	range = calloc(f->nvars + 1, sizeof(*range));
	after = calloc(f->nvars + 1, sizeof(*after));
	if (x.sites.err || !range || !after) {
		free(x.sites.v);
		free(range);
		free(after);
		return -ENOMEM;
	}
	for (i = (size_t)top; i < f->n && f->loops[i].top == top; i++)
		total_get(&x, (int)i, &t, &why);
	/* inside the nest: what is only added to or taken from ranges over every entry;
	   what is set there has no range (a value it is set to cannot name it) */
	for (i = 0; i < f->nvars; i++) {
		if (!sites_name(&x.sites, f->vars[i].name))
			range[i] = st[i];
		else if (has_kind(&x.sites, f->vars[i].name, SITE_SET) ||
			 has_kind(&x.sites, f->vars[i].name, SITE_OTHER))
			val_unknown(&range[i]);
		else
			nest_effect(&x, NULL, (int)i, &range[i]);
	}
	for (i = 0; i < f->nvars; i++)
		if (sites_name(&x.sites, f->vars[i].name) && !f->vars[i].untracked)
			nest_effect(&x, range, (int)i, &after[i]);
		else
			after[i] = st[i];
	memcpy(st, after, f->nvars * sizeof(*st));
	free(x.sites.v);
	free(range);
	free(after);
	return 0;
}

/* ---- the function, statement by statement ---------------------------------------------- */

struct flow {
	struct func *f;
	CXTranslationUnit tu;
	struct val *st;
	int err;
};

static void flow_stmt(struct flow *w, CXCursor c);

/* The outermost loops below c (not at one of its statements: a switch's case, say). */
static enum CXChildVisitResult loops_below(CXCursor c, CXCursor parent, CXClientData d)
{
	struct flow *w = d;
	int i;

	(void)parent;
	if (C.kind(c) == CXCursor_ForStmt || C.kind(c) == CXCursor_WhileStmt ||
	    C.kind(c) == CXCursor_DoStmt) {
		i = loop_at(w->f, c);
		if (i >= 0 && w->f->loops[i].parent < 0 && !w->err)
			w->err = nest_run(w->f, w->tu, i, w->st);
		return CXChildVisit_Continue;
	}
	return CXChildVisit_Recurse;
}

/* A statement whose order the walk does not follow: whatever it changes has no known value. */
/* What c changes has no known value, but a variable set once stands for itself. */
static void forget(struct flow *w, CXCursor c)
{
	struct sites s;
	size_t i;

	sites_of(&s, w->f, w->tu, c, -1);
	for (i = 0; i < s.n; i++) {
		int v = var_index(w->f, s.v[i].name);
		struct val *x = v >= 0 ? &w->st[v] : NULL;

		if (!x)
			continue;
		val_unknown(x);
		if (w->f->vars[v].once) {
			lin_one(&x->hi, s.v[i].name);
			x->lo = x->hi;
			x->lo_ok = x->hi_ok = true;
		}
		val_floor(w->f, (size_t)v, x);
	}
	if (s.err)
		w->err = s.err;
	free(s.v);
}

/* A statement whose order the walk does not follow: whatever it changes has no known value. */
static void flow_unknown(struct flow *w, CXCursor c)
{
	forget(w, c);
	C.visitChildren(c, loops_below, w);
	forget(w, c); /* and after its loops as well */
}

static bool any_loop(CXCursor c);

static enum CXChildVisitResult find_loop(CXCursor c, CXCursor parent, CXClientData d)
{
	(void)parent;
	if (C.kind(c) == CXCursor_ForStmt || C.kind(c) == CXCursor_WhileStmt ||
	    C.kind(c) == CXCursor_DoStmt) {
		*(bool *)d = true;
		return CXChildVisit_Break;
	}
	return CXChildVisit_Recurse;
}

static bool any_loop(CXCursor c)
{
	bool found = false;

	C.visitChildren(c, find_loop, &found);
	return found;
}

static void flow_stmt(struct flow *w, CXCursor c)
{
	struct func *f = w->f;
	enum CXCursorKind k = C.kind(c);
	struct kids kk;
	unsigned i;

	if (w->err)
		return;
	if (k == CXCursor_CompoundStmt) {
		kids_of(c, &kk);
		if (kk.more) {
			flow_unknown(w, c);
			return;
		}
		for (i = 0; i < kk.n; i++)
			flow_stmt(w, kk.v[i]);
	} else if (k == CXCursor_ForStmt || k == CXCursor_WhileStmt || k == CXCursor_DoStmt) {
		int me = loop_at(f, c);

		if (me < 0)
			flow_unknown(w, c);
		else
			w->err = nest_run(f, w->tu, me, w->st);
	} else if (k == CXCursor_IfStmt) {
		struct val *other = calloc(f->nvars + 1, sizeof(*other));
		struct sites s;

		kids_of(c, &kk);
		if (!other || kk.n < 2 || kk.n > 3) {
			free(other);
			if (!other)
				w->err = -ENOMEM;
			else
				flow_unknown(w, c);
			return;
		}
		sites_of(&s, f, w->tu, kk.v[0], -1); /* the condition */
		apply_in_order(f, w->tu, &s, w->st);
		free(s.v);
		memcpy(other, w->st, f->nvars * sizeof(*other));
		flow_stmt(w, kk.v[1]);
		if (kk.n == 3) {
			struct val *then = w->st;

			w->st = other;
			flow_stmt(w, kk.v[2]);
			w->st = then;
		}
		for (i = 0; i < f->nvars; i++)
			val_join(f, &w->st[i], &other[i]);
		free(other);
	} else if (any_loop(c)) {
		flow_unknown(w, c);
	} else {
		struct sites s;

		sites_of(&s, f, w->tu, c, -1);
		apply_in_order(f, w->tu, &s, w->st);
		if (s.err)
			w->err = s.err;
		free(s.v);
	}
}

/* ---- the profile --------------------------------------------------------------------------- */

static void class_text(int degree, char *out, size_t size)
{
	if (degree < 0)
		snprintf(out, size, "unbounded");
	else if (degree == 0)
		snprintf(out, size, "O(1)");
	else if (degree == 1)
		snprintf(out, size, "O(n)");
	else
		snprintf(out, size, "O(n^%d)", degree);
}

static int emit(struct sonde_profile *p, const char *source, const char *func, unsigned line,
		unsigned column, const char *subtype, const char *loop, const char *bound,
		const char *cls, int degree)
{
	char uid[512];
	json_t *extra =
		json_pack("{s:s, s:s, s:i, s:i, s:s, s:s}", "source", source, "function", func,
			  "line", (int)line, "column", (int)column, "bound", bound, "class", cls);
	long res;
	int rc;

	if (!extra)
		return -ENOMEM;
	if (loop)
		json_object_set_new(extra, "loop", json_string(loop));
	snprintf(uid, sizeof(uid), "%s:%s:%u:%u", func, source, line, column);
	res = sonde_profile__resource(p, uid, "bound", subtype, extra);
	json_decref(extra);
	if (res < 0)
		return (int)res;
	/* the degree of the bound's polynomial; null when unbounded */
	rc = sonde_profile__append(p, res, "amount",
				   degree < 0 ? json_null() : json_integer(degree));
	return rc;
}

static int write_func(struct sonde_profile *p, const char *source, struct func *f)
{
	struct sonde_strbuf text = SONDE_STRBUF_INIT;
	struct lin sum = { 0 };
	bool sum_ok = true;
	int worst = 0, rc = 0;
	size_t i;

	for (i = 0; i < f->n && !rc; i++) {
		struct loop *l = &f->loops[i];
		struct sonde_strbuf local = SONDE_STRBUF_INIT, total = SONDE_STRBUF_INIT;
		char cls[32];
		int d, ld;

		if (l->amortized || (l->local_ok && l->bounded)) {
			const struct lin *b = l->amortized ? &l->total : &l->local;

			lin_print(b, &local);
			ld = degree_of(f, b);
		} else if (l->bounded) {
			factor_text(&l->count, l->step, &local);
			ld = l->count.n > 0;
		} else {
			sonde_strbuf__addf(&local, "unbounded: %s", l->why);
			ld = -1;
		}
		class_text(ld, cls, sizeof(cls));
		rc = emit(p, source, f->name, l->line, l->column, "local", l->kind, local.buf, cls,
			  ld);
		if (l->tstate == 2) {
			lin_print(&l->total, &total);
			d = degree_of(f, &l->total);
			sum_ok = sum_ok && lin_add(&sum, &l->total, 1);
			sonde_strbuf__addf(&text, "%s%s", text.len ? " + " : "", total.buf);
		} else {
			sonde_strbuf__addf(&total, "unbounded: %s",
					   l->twhy ? l->twhy : "its loop was not reached");
			d = -1;
		}
		class_text(d, cls, sizeof(cls));
		if (!rc)
			rc = emit(p, source, f->name, l->line, l->column, "total", l->kind,
				  total.buf, cls, d);
		if (d < 0 || worst < 0)
			worst = -1;
		else if (d > worst)
			worst = d;
		sonde_strbuf__release(&local);
		sonde_strbuf__release(&total);
	}
	if (!rc) { /* the function: all its loops' iterations */
		char cls[32];

		class_text(worst, cls, sizeof(cls));
		if (worst < 0) {
			sonde_strbuf__reset(&text);
			sonde_strbuf__adds(&text, "unbounded: a loop of it is unbounded");
		} else if (sum_ok) {
			sonde_strbuf__reset(&text);
			lin_print(&sum, &text);
		}
		rc = emit(p, source, f->name, f->line, f->column, "function", NULL, text.buf, cls,
			  worst);
	}
	sonde_strbuf__release(&text);
	return rc;
}

/* ---- a function -------------------------------------------------------------------------- */

struct decls {
	struct func *f;
	int err;
};

static enum CXChildVisitResult find_decls(CXCursor c, CXCursor parent, CXClientData d)
{
	struct decls *x = d;
	struct func *f = x->f;
	enum CXCursorKind k = C.kind(c);
	char name[64];
	bool uns;

	(void)parent;
	if (k == CXCursor_GotoStmt || k == CXCursor_IndirectGotoStmt || k == CXCursor_LabelStmt)
		f->jumps = true;
	if ((k == CXCursor_ParmDecl || k == CXCursor_VarDecl) && integer_type(c, &uns)) {
		struct var *v;
		size_t i;

		name_of(c, name, sizeof(name));
		for (i = 0; i < f->nvars && strcmp(f->vars[i].name, name); i++)
			;
		if (i < f->nvars) {
			f->vars[i].untracked = true; /* two variables of one name */
		} else {
			v = realloc(f->vars, (f->nvars + 1) * sizeof(*v));
			if (!v) {
				x->err = -ENOMEM;
				return CXChildVisit_Break;
			}
			f->vars = v;
			v = &f->vars[f->nvars++];
			memset(v, 0, sizeof(*v));
			snprintf(v->name, sizeof(v->name), "%s", name);
			v->is_unsigned = uns;
		}
	}
	return CXChildVisit_Recurse;
}

static enum CXChildVisitResult find_body(CXCursor c, CXCursor parent, CXClientData d)
{
	(void)parent;
	if (C.kind(c) == CXCursor_CompoundStmt) {
		*(CXCursor *)d = c;
		return CXChildVisit_Break;
	}
	return CXChildVisit_Continue;
}

/*
 * The values the function's variables hold, statement by statement from the
 * call (its parameters for themselves), and with them every loop's total.
 */
static int flow_func(struct func *f, CXTranslationUnit tu, CXCursor fn)
{
	struct decls dx = { f, 0 };
	struct flow w = { f, tu, NULL, 0 };
	CXCursor body = { 0 };
	struct sites s;
	size_t i;

	C.visitChildren(fn, find_decls, &dx);
	if (dx.err)
		return dx.err;
	sites_of(&s, f, tu, fn, -1);
	for (i = 0; i < f->nvars; i++)
		f->vars[i].once = true;
	for (i = 0; i < s.n; i++) {
		int v = var_index(f, s.v[i].name);
		size_t j;

		if (v < 0)
			continue;
		if (s.v[i].addr)
			f->vars[v].untracked = true;
		for (j = 0; j < s.n && (j == i || strcmp(s.v[j].name, s.v[i].name)); j++)
			;
		if (j < s.n || s.v[i].kind != SITE_SET || s.v[i].loop >= 0)
			f->vars[v].once = false;
	}
	free(s.v);
	if (s.err)
		return s.err;
	w.st = calloc(f->nvars + 1, sizeof(*w.st));
	if (!w.st)
		return -ENOMEM;
	for (i = 0; i < f->nvars; i++) {
		val_unknown(&w.st[i]);
		val_floor(f, i, &w.st[i]);
	}
	/* the parameters: their values at the call */
	{
		struct kids k;
		unsigned j;

		kids_of(fn, &k);
		for (j = 0; j < k.n; j++)
			if (C.kind(k.v[j]) == CXCursor_ParmDecl) {
				char name[64];
				int v;

				name_of(k.v[j], name, sizeof(name));
				v = var_index(f, name);
				if (v >= 0) {
					lin_one(&w.st[v].hi, name);
					w.st[v].lo = w.st[v].hi;
					w.st[v].lo_ok = w.st[v].hi_ok = true;
				}
			}
	}
	C.visitChildren(fn, find_body, &body);
	if (!is_null(body)) {
		if (f->jumps)
			flow_unknown(&w, body);
		else
			flow_stmt(&w, body);
	}
	/* a loop the walk did not reach (inside an expression): nothing known */
	for (i = 0; i < f->n && !w.err; i++)
		if (f->loops[i].parent < 0 && !f->loops[i].tstate) {
			size_t j;

			for (j = 0; j < f->nvars; j++) {
				struct lin probe;

				lin_one(&probe, f->vars[j].name);
				if (written(&f->all, &probe)) {
					val_unknown(&w.st[j]);
					val_floor(f, j, &w.st[j]);
				}
			}
			w.err = nest_run(f, tu, (int)i, w.st);
		}
	free(w.st);
	return w.err;
}

struct tu_walk {
	CXTranslationUnit tu;
	struct sonde_profile *p;
	const char *source;
	size_t loops, unbounded, functions;
	int err;
};

static enum CXChildVisitResult top(CXCursor c, CXCursor parent, CXClientData d)
{
	struct tu_walk *t = d;
	struct func f = { 0 };
	struct walk w;
	CXFile file;
	unsigned off;
	size_t i;

	(void)parent;
	if (C.kind(c) != CXCursor_FunctionDecl || !C.isDefinition(c) ||
	    !C.fromMainFile(C.location(c)))
		return CXChildVisit_Continue;
	name_of(c, f.name, sizeof(f.name));
	C.spellingLocation(C.location(c), &file, &f.line, &f.column, &off);
	writes_in(t->tu, c, (CXCursor){ 0 }, &f.all);
	w = (struct walk){ t->tu, &f, -1, 0 };
	C.visitChildren(c, visit, &w);
	t->err = w.err;
	if (!t->err)
		t->err = flow_func(&f, t->tu, c);
	if (!t->err)
		t->err = write_func(t->p, t->source, &f);
	t->functions++;
	t->loops += f.n;
	for (i = 0; i < f.n; i++)
		t->unbounded += !f.loops[i].bounded;
	free(f.loops);
	free(f.vars);
	return t->err ? CXChildVisit_Break : CXChildVisit_Continue;
}

static int analyse_here(const char *const *files, size_t n, const char *const *args, size_t nargs,
			struct sonde_profile **out, struct sonde_strbuf *err)
{
	struct tu_walk t = { 0 };
	CXIndex idx;
	size_t i;
	int rc;

	*out = NULL;
	rc = load_clang(err);
	if (rc)
		return rc;
	t.p = sonde_profile__new("bound");
	idx = C.createIndex(0, 0);
	if (!t.p || !idx) {
		sonde_profile__free(t.p);
		if (idx)
			C.disposeIndex(idx);
		return -ENOMEM;
	}
	for (i = 0; i < n && !rc; i++) {
		CXTranslationUnit tu;
		unsigned k;
		FILE *f = fopen(files[i], "re");

		if (!f) {
			sonde_strbuf__addf(err, "cannot read '%s': %s", files[i], strerror(errno));
			rc = -ENOENT;
			break;
		}
		fclose(f);
		tu = C.parse(idx, files[i], args, (int)nargs, NULL, 0, CXTranslationUnit_None);
		if (!tu) {
			sonde_strbuf__addf(err,
					   "libclang cannot parse '%s' (it failed, or ran out of "
					   "the %llu GiB the analysis may use)",
					   files[i], MAX_AS_BYTES >> 30);
			rc = -EINVAL;
			break;
		}
		for (k = 0; k < C.numDiagnostics(tu) && !rc; k++) {
			CXDiagnostic dg = C.getDiagnostic(tu, k);

			if (C.diagSeverity(dg) >= CXDiagnostic_Error) {
				CXString s =
					C.formatDiagnostic(dg, CXDiagnostic_DisplaySourceLocation |
								       CXDiagnostic_DisplayColumn);

				sonde_strbuf__addf(err, "%s", C.cstr(s));
				C.disposeString(s);
				rc = -EINVAL;
			}
			C.disposeDiagnostic(dg);
		}
		if (!rc) {
			t.tu = tu;
			t.source = files[i];
			C.visitChildren(C.tuCursor(tu), top, &t);
			rc = t.err;
		}
		C.disposeTU(tu);
	}
	C.disposeIndex(idx);
	if (!rc) {
		json_t *st = json_pack("{s:I, s:I, s:I, s:I}", "files", (json_int_t)n, "functions",
				       (json_int_t)t.functions, "loops", (json_int_t)t.loops,
				       "unbounded", (json_int_t)t.unbounded);

		rc = st ? sonde_profile__set(sonde_profile__stats(t.p), "bounds", st) : -ENOMEM;
	}
	if (rc) {
		sonde_profile__free(t.p);
		return rc;
	}
	*out = t.p;
	return 0;
}

/* ---- the analysis in a child, bounded ------------------------------------------------------ */

static bool include_name(const char *line, char *out, size_t size, bool *quoted)
{
	const char *p = line, *end;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p++ != '#')
		return false;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncmp(p, "include", 7))
		return false;
	p += 7;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '"' && *p != '<')
		return false;
	*quoted = *p == '"';
	end = strchr(p + 1, *quoted ? '"' : '>');
	if (!end || (size_t)(end - p - 1) >= size)
		return false;
	snprintf(out, size, "%.*s", (int)(end - p - 1), p + 1);
	return true;
}

/*
 * The files a source includes by name that are not regular files (a device,
 * a FIFO: "#include \"/dev/zero\"" reads without end): found where the
 * compiler looks first (the including file's directory, then -I), followed
 * through the quoted includes that are files, 16 deep. 0, or -EINVAL with err.
 */
static int check_includes(const char *file, const char *const *args, size_t nargs, int depth,
			  struct sonde_strbuf *err)
{
	FILE *f = fopen(file, "re");
	char line[4096], name[1024], path[4096];
	const char *slash = strrchr(file, '/');
	unsigned lineno = 0;
	int rc = 0;

	if (!f || depth > 16)
		return f ? (fclose(f), 0) : 0;
	while (!rc && fgets(line, sizeof(line), f)) {
		struct stat st;
		bool quoted, found = false;
		size_t i;

		lineno++;
		if (!include_name(line, name, sizeof(name), &quoted))
			continue;
		for (i = 0; !found && i <= nargs; i++) {
			const char *dir = NULL;

			if (name[0] == '/')
				snprintf(path, sizeof(path), "%s", name);
			else if (i == 0 && quoted)
				snprintf(path, sizeof(path), "%.*s%s",
					 slash ? (int)(slash - file + 1) : 0, file, name);
			else if (i > 0 && !strncmp(args[i - 1], "-I", 2))
				dir = args[i - 1][2] ? args[i - 1] + 2 : i < nargs ? args[i] : NULL;
			else
				continue;
			if (dir)
				snprintf(path, sizeof(path), "%s/%s", dir, name);
			found = stat(path, &st) == 0;
		}
		if (!found)
			continue;
		if (!S_ISREG(st.st_mode)) {
			sonde_strbuf__addf(err,
					   "%s:%u: includes '%s', which is not a regular file (a "
					   "device or a FIFO is read without end)",
					   file, lineno, path);
			rc = -EINVAL;
		} else if (quoted) {
			rc = check_includes(path, args, nargs, depth + 1, err);
		}
	}
	fclose(f);
	return rc;
}

/*
 * libclang runs in a child with MAX_AS_BYTES of address space and MAX_SECONDS:
 * a source that makes it expand without end (a macro doubling itself, a huge
 * include) costs that much at most, and is an error, not the machine's memory.
 * The child sends back its answer (rc, the error text, the profile's JSON).
 */

/* What the process maps already (a sanitizer reserves terabytes of shadow
   without using them): the limit is MAX_AS_BYTES beyond it. */
static uint64_t mapped_bytes(void)
{
	unsigned long long pages = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%llu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

int sonde_bounds__analyse(const char *const *files, size_t n, const char *const *args, size_t nargs,
			  struct sonde_profile **out, struct sonde_strbuf *err)
{
	struct sonde_strbuf got = SONDE_STRBUF_INIT;
	uint64_t deadline;
	int fds[2], status = 0, rc = 0;
	bool timed_out = false;
	size_t i;
	pid_t pid;

	*out = NULL;
	for (i = 0; i < n && !rc; i++)
		rc = check_includes(files[i], args, nargs, 0, err);
	if (rc)
		return rc;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(fds[0]);
		close(fds[1]);
		return rc;
	}
	if (pid == 0) {
		struct rlimit as, cpu = { MAX_SECONDS, MAX_SECONDS + 5 };
		struct sonde_strbuf e = SONDE_STRBUF_INIT, head = SONDE_STRBUF_INIT;
		struct sonde_profile *p = NULL;
		char *json = NULL;
		size_t len = 0;
		int devnull;

		close(fds[0]);
		as.rlim_cur = as.rlim_max = mapped_bytes() + MAX_AS_BYTES;
		/* libclang's own reports of a crash are not ours to print: the error says it */
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (devnull >= 0)
			dup2(devnull, 2);
		setrlimit(RLIMIT_AS, &as);
		setrlimit(RLIMIT_CPU, &cpu);
		rc = analyse_here(files, n, args, nargs, &p, &e);
		if (!rc && !(json = sonde_profile__dump(p, &len)))
			rc = -ENOMEM;
		sonde_strbuf__addf(&head, "%d %zu\n", rc, e.len);
		if (sonde_file__write_all(fds[1], head.buf ? head.buf : "", head.len) ||
		    (e.len && sonde_file__write_all(fds[1], e.buf, e.len)) ||
		    (json && sonde_file__write_all(fds[1], json, len)))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	deadline = (uint64_t)time(NULL) + MAX_SECONDS + 10;
	for (;;) {
		struct pollfd pf = { fds[0], POLLIN, 0 };
		char buf[65536];
		ssize_t r;
		int left = (int)((int64_t)deadline - (int64_t)time(NULL));

		if (left <= 0 || poll(&pf, 1, left * 1000) == 0) {
			timed_out = true;
			kill(pid, SIGKILL);
			break;
		}
		r = read(fds[0], buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (sonde_strbuf__add(&got, buf, (size_t)r)) {
			kill(pid, SIGKILL);
			rc = -ENOMEM;
			break;
		}
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!rc) {
		int crc;
		size_t elen, off;
		char *nl = got.buf ? strchr(got.buf, '\n') : NULL;

		if (timed_out || !nl || sscanf(got.buf, "%d %zu", &crc, &elen) != 2 ||
		    (off = (size_t)(nl - got.buf) + 1) + elen > got.len) {
			if (timed_out || (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU))
				sonde_strbuf__addf(err,
						   "the analysis ran past %d s, and was stopped",
						   MAX_SECONDS);
			else if (WIFSIGNALED(status))
				sonde_strbuf__addf(
					err,
					"libclang ran out of the %llu GiB the analysis may "
					"use (killed by signal %d): does a source expand "
					"without end?",
					MAX_AS_BYTES >> 30, WTERMSIG(status));
			else
				sonde_strbuf__addf(
					err,
					"the analysis ended without an answer (exit %d): "
					"did libclang run out of the %llu GiB it may use?",
					WIFEXITED(status) ? WEXITSTATUS(status) : -1,
					MAX_AS_BYTES >> 30);
			rc = -EFBIG;
		} else if (crc) {
			sonde_strbuf__add(err, got.buf + off, elen);
			rc = crc;
		} else {
			*out = sonde_profile__parse(got.buf + off + elen, got.len - off - elen,
						    "bounds", err);
			rc = *out ? 0 : -ENOMEM;
		}
	}
	sonde_strbuf__release(&got);
	return rc;
}

#endif
