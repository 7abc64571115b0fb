// Tags of the algorithms' communication: a channel (what is communicated) in the high bits, a bucket or
// step index in the low bits, so that concurrent operations of one rank never share a tag.
#pragma once

#include <cstdint>
#include <string>

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

// What a tag names, for messages: "gradient bucket 3" for a tag made by bucket(), else "tag 7".
inline std::string describe(Tag tag) {
  const Tag channel = tag >> kIndexBits;
  const int index = static_cast<int>(tag & ((Tag{1} << kIndexBits) - 1));
  const char* name = nullptr;
  switch (channel) {
    case kGradient:
      name = "gradient bucket ";
      break;
    case kWeights:
      name = "weights bucket ";
      break;
    case kMomentum:
      name = "momentum bucket ";
      break;
    case kControl:
      name = "control message ";
      break;
    case kBackground:
      name = "background averaging ";
      break;
    default:
      return "tag " + std::to_string(tag);
  }
  return name + std::to_string(index) + " (tag " + std::to_string(tag) + ")";
}

}  // namespace bagua::tags
