// Tags of the algorithms' communication: a channel (what is communicated) in the high bits, a bucket or
// step index in the low bits, so that concurrent operations of one rank never share a tag.
#pragma once

#include <cstdint>

#include "core/check.h"
#include "core/transport.h"

namespace bagua::tags {

enum Channel : Tag {
  kGradient = 1,    // gradients of a bucket
  kWeights = 2,     // weights (decentralized, model averaging)
  kMomentum = 3,    // optimizer state (QAdam)
  kControl = 4,     // small control messages
  kBackground = 5,  // background loops (asynchronous averaging)
  kPull = 6,        // a summation server's answers to the workers' pulls (BytePS)
  kCompressed = 7,  // a bucket's compressed factors (DDP's PowerSGD hook: P, then Q)
};

constexpr int kIndexBits = 20;  // a million buckets per channel

inline Tag bucket(Channel channel, int index) {
  BAGUA_CHECK(index >= 0 && index < (1 << kIndexBits),
              "bucket index " + std::to_string(index) + " out of range");
  return (static_cast<Tag>(channel) << kIndexBits) | static_cast<Tag>(index);
}

}  // namespace bagua::tags
