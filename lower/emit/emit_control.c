/* emit_control.c - for, if (when), scoped, print.
 *
 * Control flow is uniform across the CTA: conditions and bounds are
 * scalars every thread computes alike, so barriers inside are safe.
 * Loop carries live in allocas (one per register) that SROA turns into
 * phis; the iv too.
 */
#include "emit.h"

#include <string.h>

static LLVMValueRef *carry_slots(Emit *E, const ETile *t)
{
	int n = blk_layout_nregs(t->l);
	LLVMValueRef *s = BLK_NEW_N(E->c->a, LLVMValueRef, n + 1);
	for (int r = 0; r < n; r++) {
		s[r] = blk_emit_alloca(E, LLVMTypeOf(t->r[r]));
		LLVMBuildStore(E->b, t->r[r], s[r]);
	}
	return s;
}

static EVal *load_slots(Emit *E, const ETile *like, LLVMValueRef *s)
{
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, like->l);
	for (int r = 0; r < blk_layout_nregs(like->l); r++)
		ev->t.r[r] = LLVMBuildLoad2(E->b, LLVMTypeOf(like->r[r]), s[r], "");
	return ev;
}

/* A loop schedule.c gave attr min_programs: ptxas is told that many
 * programs an SM must fit (minctasm), which caps a thread's registers. */
static void min_ctas(Emit *E, const BlkOp *op)
{
	int n = (int)blk_op_int(op, "min_programs", 0);
	if (E->min_ctas_set || n < 2)
		return;
	blk_emit_annotation(E, "minctasm", n);
	E->min_ctas_set = true;
}

void blk_emit_for(Emit *E, const BlkOp *op)
{
	const BlkRegion *body = op->regions[0];
	min_ctas(E, op);
	int nc = op->noperands - 3;
	LLVMValueRef lo = blk_emit_tile(E, op->operands[0])->r[0], hi = blk_emit_tile(E, op->operands[1])->r[0];
	LLVMValueRef step = blk_emit_tile(E, op->operands[2])->r[0];
	LLVMValueRef iv = blk_emit_alloca(E, E->i32);
	LLVMBuildStore(E->b, lo, iv);
	LLVMValueRef **slots = BLK_NEW_N(E->c->a, LLVMValueRef *, nc + 1);
	const ETile **init = BLK_NEW_N(E->c->a, const ETile *, nc + 1);
	for (int i = 0; i < nc; i++) {
		init[i] = blk_emit_tile(E, op->operands[3 + i]);
		slots[i] = carry_slots(E, init[i]);
	}
	LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(E->cx, E->fn, "for.head");
	LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(E->cx, E->fn, "for.body");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(E->cx, E->fn, "for.done");
	LLVMBuildBr(E->b, head);
	LLVMPositionBuilderAtEnd(E->b, head);
	LLVMValueRef i = LLVMBuildLoad2(E->b, E->i32, iv, "iv");
	LLVMValueRef up = LLVMBuildICmp(E->b, LLVMIntSGT, step, blk_emit_i32(E, 0), "");
	LLVMValueRef c = LLVMBuildSelect(E->b, up, LLVMBuildICmp(E->b, LLVMIntSLT, i, hi, ""),
	                                 LLVMBuildICmp(E->b, LLVMIntSGT, i, hi, ""), "");
	LLVMBuildCondBr(E->b, c, loop, done);
	LLVMPositionBuilderAtEnd(E->b, loop);
	EVal *ivv = BLK_NEW(E->c->a, EVal);
	ivv->t = blk_emit_new_tile(E, blk_emit_layout(E, body->args[0]));
	ivv->t.r[0] = i;
	blk_emit_bind(E, body->args[0], ivv);
	for (int k = 0; k < nc; k++)
		blk_emit_bind(E, body->args[1 + k], load_slots(E, init[k], slots[k]));
	blk_emit_region(E, body);
	const BlkOp *y = body->last;
	for (int k = 0; y && y->kind == BLK_OP_YIELD && k < y->noperands && k < nc; k++) {
		const ETile *t = blk_emit_tile(E, y->operands[k]);
		for (int r = 0; r < blk_layout_nregs(t->l); r++)
			LLVMBuildStore(E->b, t->r[r], slots[k][r]);
	}
	LLVMBuildStore(E->b, LLVMBuildAdd(E->b, i, step, ""), iv);
	LLVMBuildBr(E->b, head);
	LLVMPositionBuilderAtEnd(E->b, done);
	for (int k = 0; k < nc; k++)
		blk_emit_bind(E, op->results[k], load_slots(E, init[k], slots[k]));
}

void blk_emit_if(Emit *E, const BlkOp *op)
{
	LLVMValueRef c = blk_emit_tile(E, op->operands[0])->r[0];
	bool has_else = op->nregions > 1 && op->regions[1] && op->regions[1]->first;
	LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(E->cx, E->fn, "if.then");
	LLVMBasicBlockRef els = has_else ? LLVMAppendBasicBlockInContext(E->cx, E->fn, "if.else") : NULL;
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(E->cx, E->fn, "if.done");
	LLVMBuildCondBr(E->b, c, then, els ? els : done); /* no empty else block to select */
	LLVMPositionBuilderAtEnd(E->b, then);
	blk_emit_region(E, op->regions[0]);
	LLVMBuildBr(E->b, done);
	if (els) {
		LLVMPositionBuilderAtEnd(E->b, els);
		blk_emit_region(E, op->regions[1]);
		LLVMBuildBr(E->b, done);
	}
	LLVMPositionBuilderAtEnd(E->b, done);
}

void blk_emit_scoped(Emit *E, const BlkOp *op)
{
	blk_emit_region(E, op->regions[0]); /* its buffers are local_allocs inside (tile.c) */
}

/* Appends text to buf with every '%' doubled: the user's words must not
 * become printf conversions. */
static void append_literal(char *buf, size_t size, const char *text)
{
	size_t n = strlen(buf);
	for (; *text && n + 2 < size; text++) {
		buf[n++] = *text;
		if (*text == '%')
			buf[n++] = '%';
	}
	buf[n] = 0;
}

/* A program id for print at op: the CUDA block index of a parallel axis,
 * the counter of a seq axis's loop around op (blockspec.c made it a loop,
 * attr seq its axis). */
static LLVMValueRef print_program_id(Emit *E, const BlkOp *op, int axis)
{
	const BlkLaunch *l = E->c->k->launch;
	if (l->axis[axis] >= 0)
		return blk_emit_program_id(E, axis);
	for (const BlkOp *f = op->parent->parent; f; f = f->parent->parent)
		if (f->kind == BLK_OP_FOR && blk_op_int(f, "seq", -1) == axis)
			return blk_emit_val(E, f->regions[0]->args[0])->t.r[0];
	return blk_emit_i32(E, 0);
}

/* One scalar operand of print: its conversion appended to buf, its vprintf
 * argument (float: double; bool: "true"/"false") returned; NULL for a Ref. */
static LLVMValueRef print_arg(Emit *E, const BlkValue *v, char *buf, size_t size)
{
	EVal *ev = blk_emit_val(E, v);
	BlkDType dt = v->type.dtype;
	if (ev->is_ref) {
		strncat(buf, " <ref>", size - strlen(buf) - 1);
		return NULL;
	}
	LLVMValueRef x = ev->t.r[0];
	if (blk_dtype_is_float(dt) || blk_dtype_is_fp8(dt)) {
		strncat(buf, " %g", size - strlen(buf) - 1);
		LLVMValueRef f = blk_dtype_is_fp8(dt) ? blk_emit_fp8_to_f32(E, x, dt) : blk_emit_to_f32(E, x, dt);
		return LLVMBuildFPExt(E->b, f, LLVMDoubleTypeInContext(E->cx), "");
	}
	if (dt == BLK_BOOL) {
		LLVMValueRef t = LLVMBuildGlobalStringPtr(E->b, "true", "true");
		LLVMValueRef f = LLVMBuildGlobalStringPtr(E->b, "false", "false");
		if (LLVMGetIntTypeWidth(LLVMTypeOf(x)) != 1)
			x = LLVMBuildICmp(E->b, LLVMIntNE, x, LLVMConstInt(LLVMTypeOf(x), 0, false), "");
		strncat(buf, " %s", size - strlen(buf) - 1);
		return LLVMBuildSelect(E->b, x, t, f, "");
	}
	strncat(buf, dt == BLK_U32 ? " %u" : " %d", size - strlen(buf) - 1);
	return blk_emit_to_i32(E, x, dt);
}

void blk_emit_vprintf(Emit *E, const char *fmt, const char *name, const LLVMValueRef *vals,
                      LLVMTypeRef *tys, int n)
{
	LLVMValueRef argbuf = LLVMConstPointerNull(E->p0);
	if (n > 0) {
		LLVMTypeRef st = LLVMStructTypeInContext(E->cx, tys, (unsigned)n, false);
		argbuf = blk_emit_alloca(E, st);
		for (int i = 0; i < n; i++)
			LLVMBuildStore(E->b, vals[i], LLVMBuildStructGEP2(E->b, st, argbuf, (unsigned)i, ""));
	}
	LLVMValueRef str = LLVMBuildGlobalStringPtr(E->b, fmt, name);
	LLVMTypeRef pt[2] = { E->p0, E->p0 };
	LLVMTypeRef ft = LLVMFunctionType(E->i32, pt, 2, false);
	LLVMValueRef f = LLVMGetNamedFunction(E->mod, "vprintf");
	if (!f)
		f = LLVMAddFunction(E->mod, "vprintf", ft);
	LLVMValueRef args[2] = { str, argbuf };
	LLVMBuildCall2(E->b, ft, f, args, 2, "");
}

/* print: thread 0 of each program calls vprintf with the program ids and
 * the scalar operands (the checker allows only scalars), in the
 * interpreter's format: floats as %g, bools as true/false. */
void blk_emit_print(Emit *E, const BlkOp *op)
{
	const BlkAttr *fmt = blk_op_attr(op, "fmt");
	const BlkKernel *k = E->c->k;
	char buf[1024] = "program (";
	for (int a = 0; a < k->grid_rank; a++)
		strncat(buf, a ? ", %d" : "%d", sizeof buf - strlen(buf) - 1);
	strncat(buf, "): ", sizeof buf - strlen(buf) - 1);
	append_literal(buf, sizeof buf, fmt && fmt->kind == BLK_ATTR_STRING ? fmt->s : "");
	int n = k->grid_rank + op->noperands;
	LLVMValueRef *vals = BLK_NEW_N(E->c->a, LLVMValueRef, n + 1);
	LLVMTypeRef *tys = BLK_NEW_N(E->c->a, LLVMTypeRef, n + 1);
	int m = 0;
	for (int a = 0; a < k->grid_rank; a++) {
		vals[m] = print_program_id(E, op, a);
		tys[m++] = E->i32;
	}
	for (int i = 0; i < op->noperands; i++) {
		LLVMValueRef x = print_arg(E, op->operands[i], buf, sizeof buf);
		if (x) {
			vals[m] = x;
			tys[m++] = LLVMTypeOf(x);
		}
	}
	strncat(buf, "\n", sizeof buf - strlen(buf) - 1);
	LLVMValueRef is0 = LLVMBuildICmp(E->b, LLVMIntEQ, E->tid, blk_emit_i32(E, 0), "");
	LLVMBasicBlockRef cont = blk_emit_begin_if(E, is0);
	blk_emit_vprintf(E, buf, "fmt", vals, tys, m);
	blk_emit_end_if(E, cont);
}
