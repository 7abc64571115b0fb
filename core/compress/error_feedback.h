// error_feedback: a wrapper that remembers what its compressor lost and adds it to the next input
// (Seide et al., "1-bit SGD", Interspeech 2014; Karimireddy et al., "Error Feedback Fixes SignSGD",
// ICML 2019; Stich et al., "Sparsified SGD with Memory", NeurIPS 2018). Bagua never shipped it (its
// issue #68 asked for it).
//
// Terms. The *residual* e starts at zero. encode(x):
//   corrected = x + e
//   c         = C(corrected)             (the inner compressor's encoding, which is what is sent)
//   e         = corrected - D(c)         (what the receiver will not see)
// so that over T steps sum D(c_t) = sum x_t - e_T: the decoded outputs track the inputs up to the
// current residual. decode is the inner compressor's.
//
// The residual is sized at the first encode and lives in the input's space (nothing is allocated for a
// meta input). An instance belongs to one buffer site: a later encode of another length throws
// ConfigError. The encoding's layout and size are the inner compressor's.
#pragma once

#include <memory>

#include "core/compress/compressor.h"

namespace bagua {

class ErrorFeedbackCompressor final : public Compressor {
 public:
  explicit ErrorFeedbackCompressor(std::unique_ptr<Compressor> inner);

  std::string name() const override { return "error_feedback(" + inner_->name() + ")"; }
  Bytes encoded_bytes(size_t n) const override { return inner_->encoded_bytes(n); }
  void encode(const BufferView& in, const BufferView& out) override;
  void decode(const BufferView& in, const BufferView& out) override { inner_->decode(in, out); }
  Work encode_cost(size_t n) const override;
  Work decode_cost(size_t n) const override { return inner_->decode_cost(n); }

  // The current residual (empty before the first encode).
  BufferView residual() const { return residual_.view(); }
  const Compressor& inner() const { return *inner_; }

 private:
  std::unique_ptr<Compressor> inner_;
  bool sized_ = false;
  Buffer residual_;
  Buffer corrected_;
  Buffer decoded_;
};

}  // namespace bagua
