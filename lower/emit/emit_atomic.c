/* emit_atomic.c - one element's read-modify-write for atomic_add,
 * atomic_max, atomic_min and atomic_cas; emit_memory.c walks the elements,
 * masks them and picks the thread that owns each.
 *
 * Relaxed (monotonic) ordering, as atomic_add always had: programs that
 * race on an element need each update whole, not an order between them.
 * PTX has no f32 atom.max/min, so they go through the integer ones on the
 * float's bits, which then order like IEEE 754's totalOrder (-NaN < -inf <
 * ... < -0 < +0 < ... < inf < NaN): a value whose sign bit is clear by a
 * signed max (min) -- every element whose sign bit is set is a negative
 * int, below it -- and a value whose sign bit is set by an unsigned min
 * (max) -- every element whose sign bit is clear is a smaller unsigned int.
 * Each update is then exactly max(element, value) under that order, so
 * racing updates end the same in any order.  The interpreter computes the
 * same (total_max and total_min in ir/interp.c).
 */
#include "emit.h"

static void rmw(Emit *E, LLVMAtomicRMWBinOp bop, LLVMValueRef p, LLVMValueRef x)
{
	LLVMBuildAtomicRMW(E->b, bop, p, x, LLVMAtomicOrderingMonotonic, false);
}

static void float_maxmin(Emit *E, bool max, LLVMValueRef p, LLVMValueRef x)
{
	LLVMValueRef bits = LLVMBuildBitCast(E->b, x, E->i32, "");
	LLVMValueRef clear = LLVMBuildICmp(E->b, LLVMIntSGE, bits, blk_emit_i32(E, 0), "");
	LLVMBasicBlockRef cont = blk_emit_begin_if(E, clear);
	rmw(E, max ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpMin, p, bits);
	blk_emit_end_if(E, cont);
	cont = blk_emit_begin_if(E, LLVMBuildNot(E->b, clear, ""));
	rmw(E, max ? LLVMAtomicRMWBinOpUMin : LLVMAtomicRMWBinOpUMax, p, bits);
	blk_emit_end_if(E, cont);
}

static void add(Emit *E, LLVMValueRef p, LLVMValueRef x, BlkDType dt)
{
	rmw(E, blk_dtype_is_float(dt) ? LLVMAtomicRMWBinOpFAdd
	       : dt == BLK_BOOL       ? LLVMAtomicRMWBinOpOr
	                              : LLVMAtomicRMWBinOpAdd, p, x);
}

void blk_emit_atomic_rmw(Emit *E, const BlkOp *op, LLVMValueRef p, LLVMValueRef x, BlkDType dt)
{
	bool max = op->kind == BLK_OP_ATOMIC_MAX;
	switch (op->kind) {
	case BLK_OP_ATOMIC_ADD: add(E, p, x, dt); return;
	case BLK_OP_ATOMIC_MAX:
	case BLK_OP_ATOMIC_MIN:
		if (dt == BLK_F32)
			float_maxmin(E, max, p, x);
		else
			rmw(E, max ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpMin, p, x);
		return;
	case BLK_OP_ATOMIC_CAS: {
		LLVMValueRef cmp = blk_emit_tile(E, op->operands[op->noperands - 2])->r[0];
		LLVMBuildAtomicCmpXchg(E->b, p, cmp, x, LLVMAtomicOrderingMonotonic,
		                       LLVMAtomicOrderingMonotonic, false);
		return;
	}
	default: blk_die("lower: emit: %s is not an atomic", blk_op_name(op->kind));
	}
}
