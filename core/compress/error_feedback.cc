#include "core/compress/error_feedback.h"

#include "core/compress/kernels.h"
#include "core/ops.h"

namespace bagua {

ErrorFeedbackCompressor::ErrorFeedbackCompressor(std::unique_ptr<Compressor> inner)
    : inner_(std::move(inner)) {
  BAGUA_CHECK(inner_ != nullptr, "error feedback around no compressor");
}

std::unique_ptr<Compressor> make_error_feedback(std::unique_ptr<Compressor> inner) {
  return std::make_unique<ErrorFeedbackCompressor>(std::move(inner));
}

void ErrorFeedbackCompressor::encode(const BufferView& in, const BufferView& out) {
  BAGUA_CHECK(in.dtype() == DType::kF32,
              name() + " encode: input is " + to_string(in.dtype()) + ", expected f32");
  const size_t n = in.count();
  if (!sized_) {
    residual_ = Buffer::like(in, DType::kF32, n);
    fill(residual_, 0.0);
    sized_ = true;
  }
  if (n != residual_.count() || in.memory() != residual_.view().memory()) {
    throw ConfigError(name() + ": this instance keeps the residual of a buffer of " +
                      std::to_string(residual_.count()) + " " + to_string(residual_.view().memory()) +
                      " elements, and was given " + std::to_string(n) + " " + to_string(in.memory()) +
                      " elements (use one instance per buffer site)");
  }
  if (in.is_host() && out.is_host()) {
    // corrected lives in the residual's buffer: the float operations of copy then axpy (x + 1 e),
    // encode, then corrected + (-1) D(c) — the inner compressor's fused step where it has one.
    if (inner_->encode_residual(in, residual_, out)) return;  // e = x + e, c = C(e), e = e - D(c)
    float* e = residual_.as<float>().data();
    compress_kernels::add_scaled(in.as<float>().data(), 1.0f, e, n, e);  // corrected = x + e
    if (decoded_.count() != n) decoded_ = Buffer::like(in, DType::kF32, n);
    inner_->encode(residual_, out);  // c = C(corrected)
    inner_->decode(out, decoded_);   // D(c)
    compress_kernels::add_scaled(e, -1.0f, decoded_.as<float>().data(), n,
                                 e);  // e = corrected - D(c)
    return;
  }
  if (corrected_.count() != n) {
    corrected_ = Buffer::like(in, DType::kF32, n);
    decoded_ = Buffer::like(in, DType::kF32, n);
  }
  copy(corrected_, in);              // corrected = x
  axpy(corrected_, 1.0, residual_);  // corrected = x + e
  inner_->encode(corrected_, out);   // c = C(corrected)
  inner_->decode(out, decoded_);     // D(c)
  copy(residual_, corrected_);       // e = corrected
  axpy(residual_, -1.0, decoded_);   // e = corrected - D(c)
}

// The inner encode and decode, plus two fused vector passes (x + e and corrected - D(c)): each reads 8n
// bytes and writes 4n, one add per element.
Work ErrorFeedbackCompressor::encode_cost(size_t n) const {
  const Work passes{2.0 * static_cast<double>(n), Bytes(static_cast<int64_t>(24 * n)), {}};
  return inner_->encode_cost(n) + inner_->decode_cost(n) + passes;
}

}  // namespace bagua
