// Element-wise operations on buffer views, dispatched on the destination's space.
// On meta buffers every one of them is a no-op; shapes are still checked.
#pragma once

#include "core/buffer.h"

namespace bagua {

void copy(const BufferView& dst, const BufferView& src);                 // dst := src
void reduce(const BufferView& dst, const BufferView& src, ReduceOp op);  // dst := dst op src
void scale(const BufferView& x, double a);                               // x := a x
void axpy(const BufferView& y, double a, const BufferView& x);           // y := y + a x
void fill(const BufferView& x, double v);                                // x := v

}  // namespace bagua
