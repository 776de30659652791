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
 * from above. Its class is O(n^d), d the number of factors that depend on a
 * variable. A total is given only over variables that no statement of the
 * function changes (parameters, constants); otherwise it is unbounded too.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/bounds.h>
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

#define MAX_KIDS 64

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
	const char *kind;
	bool bounded;
	char why[160];
	char counter[64];  /* a for loop's counter (enclosed loops' bounds may name it) */
	char entry[64];	   /* a while loop's: its count is in terms of its entry value */
	struct lin count;  /* iterations before the step: max(0, count) ... */
	long long step;	   /* ... ceiled over the step */
	struct lin lo, hi; /* the counter's values in the body */
};

struct func {
	char name[128];
	unsigned line, column;
	struct loop *loops;
	size_t n, cap;
	struct writes all; /* what the function's body writes */
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
	} else {
		unbounded(l, "the counter moves away from its bound, or the comparison is not "
			     "<, <=, > or >=");
		return;
	}
	l->bounded = true;
}

static void for_loop(CXTranslationUnit tu, CXCursor c, struct loop *l)
{
	struct kids k, d;
	CXCursor var = { 0 };
	struct lin start, bound;
	struct writes w;
	char op[8];
	bool uns;

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
	if (!compare_counter(tu, k.v[1], l->counter, op, sizeof(op), &bound)) {
		unbounded(l, "the condition does not compare the counter with a linear "
			     "expression");
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
	if (written(&w, &bound) || lin_coef(&bound, l->counter)) {
		unbounded(l, "the body changes what the counter is compared with");
		return;
	}
	counted(l, op, &start, &bound, uns);
}

static void while_loop(CXTranslationUnit tu, CXCursor c, struct loop *l)
{
	struct kids k, body;
	CXCursor var = { 0 };
	struct lin bound, start = { 0 };
	struct writes w;
	char op[8];
	unsigned i, steps = 0;
	bool uns;

	kids_of(c, &k);
	if (k.n != 2 || !comparison(tu, k.v[0], &var, op, sizeof(op), &bound)) {
		unbounded(l, "the condition does not compare a variable with a linear "
			     "expression");
		return;
	}
	name_of(var, l->counter, sizeof(l->counter));
	if (!integer_type(var, &uns)) {
		unbounded(l, "the counter is not an integer");
		return;
	}
	if (C.kind(k.v[1]) != CXCursor_CompoundStmt) {
		unbounded(l, "the body is one statement");
		return;
	}
	/* exactly one step, a statement of the body itself */
	kids_of(k.v[1], &body);
	for (i = 0; i < body.n; i++) {
		long long s = step_of(tu, body.v[i], var);

		if (s) {
			l->step = s;
			steps++;
		}
	}
	if (steps != 1 || body.more) {
		unbounded(l, "the counter is not stepped exactly once by a statement of the "
			     "body itself");
		return;
	}
	writes_in(tu, k.v[1], var, &w);
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
	counted(l, op, &start, &bound, uns);
	/* in terms of the entry value, under the counter's own name: not a value the
	   loops inside can be bounded by (it changes as they run) */
	snprintf(l->entry, sizeof(l->entry), "%s", l->counter);
	l->counter[0] = 0;
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

/* ---- totals and the profile ------------------------------------------------------------ */

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

/*
 * A loop's total: the factors of its nest, each counter of an enclosing loop
 * replaced by the value that makes the factor greatest. Returns the degree,
 * or -1 when unbounded (why).
 */
static int total_of(const struct func *f, size_t i, struct sonde_strbuf *out, const char **why)
{
	int degree = 0;
	bool first = true;
	size_t at;

	for (at = i; at != (size_t)-1;
	     at = f->loops[at].parent < 0 ? (size_t)-1 : (size_t)f->loops[at].parent) {
		const struct loop *l = &f->loops[at];
		struct lin c = l->count;
		int e, guard;

		if (!l->bounded) {
			*why = at == i ? l->why : "an enclosing loop is unbounded";
			return -1;
		}
		/* the enclosing counters, innermost first, until none is left */
		for (guard = 0; guard < 64; guard++) {
			bool any = false;

			for (e = l->parent; e >= 0; e = f->loops[e].parent) {
				const struct loop *o = &f->loops[e];
				long long k = o->counter[0] ? lin_coef(&c, o->counter) : 0;

				if (!k)
					continue;
				if (!lin_subst(&c, o->counter, k > 0 ? &o->hi : &o->lo)) {
					*why = "too many variables in the bound";
					return -1;
				}
				any = true;
			}
			if (!any)
				break;
		}
		/* a variable the function changes has no one value over the call, but
		   for a while loop entered once: its counter's value at that entry */
		if (l->entry[0] && l->parent < 0) {
			struct lin rest = c;
			struct lin drop = { 0 };

			drop.n = 1;
			snprintf(drop.var[0], sizeof(drop.var[0]), "%s", l->entry);
			drop.k[0] = lin_coef(&c, l->entry);
			lin_add(&rest, &drop, -1);
			if (written(&f->all, &rest)) {
				*why = "the bound depends on a variable the function changes";
				return -1;
			}
		} else if (written(&f->all, &c)) {
			*why = "the bound depends on a variable the function changes";
			return -1;
		}
		if (!first)
			sonde_strbuf__adds(out, " * ");
		factor_text(&c, l->step, out);
		degree += c.n > 0;
		first = false;
	}
	return degree;
}

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
	struct sonde_strbuf sum = SONDE_STRBUF_INIT;
	int worst = 0, rc = 0;
	size_t i;

	for (i = 0; i < f->n && !rc; i++) {
		struct loop *l = &f->loops[i];
		struct sonde_strbuf local = SONDE_STRBUF_INIT, total = SONDE_STRBUF_INIT;
		const char *why = NULL;
		char cls[32];
		int d;

		if (l->bounded)
			factor_text(&l->count, l->step, &local);
		else
			sonde_strbuf__addf(&local, "unbounded: %s", l->why);
		class_text(l->bounded ? l->count.n > 0 : -1, cls, sizeof(cls));
		rc = emit(p, source, f->name, l->line, l->column, "local", l->kind, local.buf, cls,
			  l->bounded ? l->count.n > 0 : -1);
		d = total_of(f, i, &total, &why);
		if (d < 0) {
			sonde_strbuf__reset(&total);
			sonde_strbuf__addf(&total, "unbounded: %s", why);
		}
		class_text(d, cls, sizeof(cls));
		if (!rc)
			rc = emit(p, source, f->name, l->line, l->column, "total", l->kind,
				  total.buf, cls, d);
		if (d < 0 || worst < 0)
			worst = -1;
		else if (d > worst)
			worst = d;
		if (d >= 0)
			sonde_strbuf__addf(&sum, "%s%s", sum.len ? " + " : "", total.buf);
		sonde_strbuf__release(&local);
		sonde_strbuf__release(&total);
	}
	if (!rc) { /* the function: all its loops' iterations */
		char cls[32];

		class_text(worst, cls, sizeof(cls));
		if (worst < 0) {
			sonde_strbuf__reset(&sum);
			sonde_strbuf__adds(&sum, "unbounded: a loop of it is unbounded");
		} else if (!sum.len) {
			sonde_strbuf__adds(&sum, "0");
		}
		rc = emit(p, source, f->name, f->line, f->column, "function", NULL, sum.buf, cls,
			  worst);
	}
	sonde_strbuf__release(&sum);
	return rc;
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
		t->err = write_func(t->p, t->source, &f);
	t->functions++;
	t->loops += f.n;
	for (i = 0; i < f.n; i++)
		t->unbounded += !f.loops[i].bounded;
	free(f.loops);
	return t->err ? CXChildVisit_Break : CXChildVisit_Continue;
}

int sonde_bounds__analyse(const char *const *files, size_t n, const char *const *args, size_t nargs,
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
			sonde_strbuf__addf(err, "libclang cannot parse '%s'", files[i]);
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

#endif
