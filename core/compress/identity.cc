#include "core/compress/identity.h"

#include "core/compress/common.h"
#include "core/ops.h"

namespace bagua {

using compress_detail::check_decode;
using compress_detail::check_encode;

void IdentityCompressor::encode(const BufferView& in, const BufferView& out) {
  if (!check_encode(*this, in, out)) return;
  copy(out.reinterpret(DType::kF32), in);
}

void IdentityCompressor::decode(const BufferView& in, const BufferView& out) {
  if (!check_decode(*this, in, out)) return;
  copy(out, in.reinterpret(DType::kF32));
}

// A copy: 4n bytes read, 4n written, no arithmetic.
Work IdentityCompressor::encode_cost(size_t n) const {
  return Work{0, Bytes(static_cast<int64_t>(8 * n)), {}};
}
Work IdentityCompressor::decode_cost(size_t n) const {
  return encode_cost(n);
}

}  // namespace bagua
