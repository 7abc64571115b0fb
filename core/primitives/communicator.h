// Communicator — where a primitive runs, flat or hierarchical, after Bagua's BaguaCommunicator
// (rust/bagua-core/bagua-core-internal/src/communicators/mod.rs, execute_communication).
//
// Terms:
//   world      every rank of the training job
//   inner      the group the primitive's own communication runs on: the world when flat; the host
//              leaders when hierarchical (absent on the other ranks of a host)
//   pre        hierarchical only: intra-host reduce of the buffer onto the host leader, in full
//              precision, averaged over the host's ranks or summed (Bagua's hierarchical_pre)
//   post       hierarchical only: intra-host broadcast of the leader's buffer (Bagua's
//              hierarchical_post)
//
// execute(data, ...) runs pre, then `op` on the inner group (leaders only), then post — exactly Bagua's
// execute_communication, whose three flags say which of the steps a primitive wants.
//
// Built once (in an algorithm's init) and shared by every bucket's primitive: building a hierarchical
// communicator is collective (every rank makes its sub-groups in the same order).
//
// Every primitive is built in one shape, (context, communicator, buffer, options):
//   Primitive(RankContext& ctx, Communicator& communicator, const BufferView& like,
//             const PrimitiveOptions& options);
// `like` is a buffer of the primitive's data (its count, dtype and space; the weights themselves for
// the primitives that keep them or copy them once), and the options struct, named after the primitive,
// holds everything else (compressor factory, peer mode, step size, ...).
#pragma once

#include <functional>
#include <optional>

#include "core/collectives/collectives.h"
#include "core/transport.h"

namespace bagua {

class Communicator {
 public:
  // `intra_host`: how pre and post run (collectives::IntraHostOptions; validated here, ConfigError for
  // a segment <= 0); unused when flat.
  Communicator(Transport& world, bool hierarchical, collectives::IntraHostOptions intra_host = {});
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  bool hierarchical() const { return groups_.has_value(); }
  // The inner group, or nullptr on a rank that is not a host leader of a hierarchical communicator.
  Transport* inner();
  // Size of the inner group on every rank: the world size when flat, the number of hosts when
  // hierarchical (known to non-leaders too).
  int inner_size() const;
  Transport& world() { return world_; }
  // The host groups of a hierarchical communicator, for primitives that run a two-level collective of
  // their own (C_FP_S); nullptr when flat.
  collectives::HierarchicalGroups* groups() { return groups_ ? &*groups_ : nullptr; }

  // pre (if `pre`), op(inner) on the ranks that have an inner group, post (if `post`). A flat
  // communicator runs op(world) only.
  void execute(const BufferView& data, bool intranode_average, bool pre, bool post, Tag tag,
               const std::function<void(Transport& inner)>& op);

 private:
  Transport& world_;
  std::optional<collectives::HierarchicalGroups> groups_;
};

}  // namespace bagua
