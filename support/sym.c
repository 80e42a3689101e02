/* sym.c - construction, folding, evaluation and printing of symbolic sizes. */
#include "sym.h"
#include "diag.h"

#include <string.h>

static const char *const sym_names[] = { /* ORDER SYM */
	"const", "var", "add", "sub", "mul", "floordiv", "cdiv", "mod", "min", "max",
};

const char *blk_sym_kind_name(BlkSymKind k)
{
	return sym_names[k];
}

const BlkSym *blk_sym_const(BlkArena *a, int64_t v)
{
	BlkSym *s = BLK_NEW(a, BlkSym);
	s->kind = BLK_SYM_CONST;
	s->value = v;
	return s;
}

const BlkSym *blk_sym_var(BlkArena *a, const char *name)
{
	BlkSym *s = BLK_NEW(a, BlkSym);
	s->kind = BLK_SYM_VAR;
	s->name = name;
	return s;
}

static int64_t floordiv(int64_t x, int64_t y)
{
	int64_t q = x / y;
	return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}

/* Applies k to constants; false on division by zero or overflow. */
static bool fold(BlkSymKind k, int64_t x, int64_t y, int64_t *out)
{
	switch (k) {
	case BLK_SYM_ADD: return !__builtin_add_overflow(x, y, out);
	case BLK_SYM_SUB: return !__builtin_sub_overflow(x, y, out);
	case BLK_SYM_MUL: return !__builtin_mul_overflow(x, y, out);
	case BLK_SYM_MIN: *out = x < y ? x : y; return true;
	case BLK_SYM_MAX: *out = x > y ? x : y; return true;
	default: break;
	}
	if (y == 0 || (x == INT64_MIN && y == -1))
		return false;
	switch (k) {
	case BLK_SYM_FLOORDIV: *out = floordiv(x, y); return true;
	case BLK_SYM_CDIV:
		if (x == INT64_MIN) /* -x would overflow */
			return false;
		*out = -floordiv(-x, y);
		return true;
	case BLK_SYM_MOD: *out = x - y * floordiv(x, y); return true;
	default: blk_die("sym: bad binary kind %d", k);
	}
}

static bool is_value(const BlkSym *s, int64_t v)
{
	return s->kind == BLK_SYM_CONST && s->value == v;
}

/* Identities that keep printed shapes short: x+0, x-0, x*1, x*0, x/1. */
static const BlkSym *simplify(BlkSymKind k, const BlkSym *x, const BlkSym *y)
{
	switch (k) {
	case BLK_SYM_ADD:
		return is_value(x, 0) ? y : is_value(y, 0) ? x : NULL;
	case BLK_SYM_SUB:
		return is_value(y, 0) ? x : NULL;
	case BLK_SYM_MUL:
		if (is_value(x, 1) || is_value(y, 0))
			return y;
		return is_value(y, 1) || is_value(x, 0) ? x : NULL;
	case BLK_SYM_FLOORDIV:
	case BLK_SYM_CDIV:
		return is_value(y, 1) ? x : NULL;
	case BLK_SYM_MIN:
	case BLK_SYM_MAX:
		return blk_sym_equal(x, y) ? x : NULL;
	default:
		return NULL;
	}
}

const BlkSym *blk_sym_binary(BlkArena *a, BlkSymKind k, const BlkSym *x, const BlkSym *y)
{
	int64_t v;
	if (x->kind == BLK_SYM_CONST && y->kind == BLK_SYM_CONST && fold(k, x->value, y->value, &v))
		return blk_sym_const(a, v);
	const BlkSym *same = simplify(k, x, y);
	if (same)
		return same;
	BlkSym *s = BLK_NEW(a, BlkSym);
	s->kind = k;
	s->a = x;
	s->b = y;
	return s;
}

bool blk_sym_equal(const BlkSym *x, const BlkSym *y)
{
	if (x == y)
		return true;
	if (!x || !y || x->kind != y->kind)
		return false;
	switch (x->kind) {
	case BLK_SYM_CONST: return x->value == y->value;
	case BLK_SYM_VAR: return strcmp(x->name, y->name) == 0;
	default: return blk_sym_equal(x->a, y->a) && blk_sym_equal(x->b, y->b);
	}
}

bool blk_sym_is_const(const BlkSym *s, int64_t *out)
{
	if (s->kind != BLK_SYM_CONST)
		return false;
	if (out)
		*out = s->value;
	return true;
}

static bool lookup(const BlkSymEnv *env, const char *name, int64_t *out)
{
	for (int i = 0; env && i < env->n; i++) {
		if (strcmp(env->names[i], name) == 0) {
			*out = env->values[i];
			return true;
		}
	}
	return false;
}

bool blk_sym_eval(const BlkSym *s, const BlkSymEnv *env, int64_t *out)
{
	int64_t x, y;
	switch (s->kind) {
	case BLK_SYM_CONST: *out = s->value; return true;
	case BLK_SYM_VAR: return lookup(env, s->name, out);
	default:
		return blk_sym_eval(s->a, env, &x) && blk_sym_eval(s->b, env, &y) &&
		       fold(s->kind, x, y, out);
	}
}

const BlkSym *blk_sym_subst(BlkArena *a, const BlkSym *s, const BlkSymEnv *env)
{
	int64_t v;
	switch (s->kind) {
	case BLK_SYM_CONST: return s;
	case BLK_SYM_VAR: return lookup(env, s->name, &v) ? blk_sym_const(a, v) : s;
	default:
		return blk_sym_binary(a, s->kind, blk_sym_subst(a, s->a, env),
		                      blk_sym_subst(a, s->b, env));
	}
}

int64_t blk_gcd(int64_t a, int64_t b)
{
	a = a < 0 ? -a : a;
	b = b < 0 ? -b : b;
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

int64_t blk_sym_divisor(const BlkSym *s, const BlkSymEnv *divs)
{
	int64_t v, x, y;
	switch (s->kind) {
	case BLK_SYM_CONST: return s->value < 0 ? -s->value : s->value;
	case BLK_SYM_VAR: return lookup(divs, s->name, &v) && v > 0 ? v : 1;
	case BLK_SYM_ADD:
	case BLK_SYM_SUB:
	case BLK_SYM_MIN:
	case BLK_SYM_MAX:
		return blk_gcd(blk_sym_divisor(s->a, divs), blk_sym_divisor(s->b, divs));
	case BLK_SYM_MUL:
		x = blk_sym_divisor(s->a, divs), y = blk_sym_divisor(s->b, divs);
		if (!x || !y)
			return 0;
		return x <= INT32_MAX && y <= INT32_MAX ? x * y : 1;
	default: return 1;
	}
}

bool blk_sym_uses(const BlkSym *s, const char *name)
{
	if (s->kind == BLK_SYM_VAR)
		return strcmp(s->name, name) == 0;
	return s->kind != BLK_SYM_CONST && (blk_sym_uses(s->a, name) || blk_sym_uses(s->b, name));
}

static int precedence(BlkSymKind k)
{
	switch (k) {
	case BLK_SYM_ADD:
	case BLK_SYM_SUB: return 1;
	case BLK_SYM_MUL:
	case BLK_SYM_FLOORDIV:
	case BLK_SYM_MOD: return 2;
	default: return 3; /* atoms and calls */
	}
}

static int print_operand(FILE *out, const BlkSym *s, int min_prec)
{
	if (precedence(s->kind) >= min_prec)
		return blk_sym_print(out, s);
	int n = fprintf(out, "(");
	n += blk_sym_print(out, s);
	return n + fprintf(out, ")");
}

int blk_sym_print(FILE *out, const BlkSym *s)
{
	static const char *infix[] = { [BLK_SYM_ADD] = " + ", [BLK_SYM_SUB] = " - ",
		[BLK_SYM_MUL] = " * ", [BLK_SYM_FLOORDIV] = " ~/ ", [BLK_SYM_MOD] = " % " };
	int n, p;
	switch (s->kind) {
	case BLK_SYM_CONST: return fprintf(out, "%lld", (long long)s->value);
	case BLK_SYM_VAR: return fprintf(out, "%s", s->name);
	case BLK_SYM_CDIV:
	case BLK_SYM_MIN:
	case BLK_SYM_MAX:
		n = fprintf(out, "%s(", sym_names[s->kind]);
		n += blk_sym_print(out, s->a);
		n += fprintf(out, ", ");
		n += blk_sym_print(out, s->b);
		return n + fprintf(out, ")");
	default:
		p = precedence(s->kind);
		n = print_operand(out, s->a, p);
		n += fprintf(out, "%s", infix[s->kind]);
		return n + print_operand(out, s->b, p + 1); /* left-associative */
	}
}

const char *blk_sym_str(BlkArena *a, const BlkSym *s)
{
	BlkArenaStream m;
	blk_sym_print(blk_arena_stream_open(&m), s);
	return blk_arena_stream_close(&m, a);
}
