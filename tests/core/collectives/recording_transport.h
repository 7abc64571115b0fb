// A Transport that wraps another and records, per rank, the messages and bytes it sends and the *step*
// of every message (core/collectives/cost.h): a send's step is one more than the rank's clock, and the
// clock is the largest step the rank has sent or received. Tests compare these records with the
// catalogue's closed forms.
//
// The step of a message travels beside it, in a ledger shared by the ranks of one world: the n-th send
// from a to b with tag t in one group records its step at position n, and the n-th receive posted for
// that key reads it once it has completed (matching is in posting order, so they are the same message).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <tuple>
#include <vector>

#include "core/transport.h"

namespace bagua::testing {

struct RankRecord {
  int64_t clock = 0;     // the latest step this rank sent or received
  int64_t messages = 0;  // sends
  int64_t bytes = 0;     // bytes sent
};

class Ledger {
 public:
  struct Key {
    uint64_t group;
    int src;  // world ranks
    int dst;
    Tag tag;
    auto operator<=>(const Key&) const = default;
  };
  size_t record_send(const Key& key, int64_t step) {
    std::lock_guard<std::mutex> lock(mu_);
    Channel& c = channels_[key];
    c.steps.push_back(step);
    return c.steps.size() - 1;
  }
  size_t reserve_receive(const Key& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return channels_[key].receives++;
  }
  int64_t step_of(const Key& key, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    const Channel& c = channels_[key];
    BAGUA_CHECK(n < c.steps.size(), "a receive completed before its send was recorded");
    return c.steps[n];
  }

 private:
  struct Channel {
    std::vector<int64_t> steps;
    size_t receives = 0;
  };
  std::mutex mu_;
  std::map<Key, Channel> channels_;
};

class RecordingTransport final : public Transport {
 public:
  // `world_of[i]` is the world rank of group rank i.
  RecordingTransport(std::unique_ptr<Transport> owned, Transport& inner, std::shared_ptr<Ledger> ledger,
                     uint64_t group, std::vector<int> world_of, RankRecord* record)
      : owned_(std::move(owned)),
        inner_(inner),
        ledger_(std::move(ledger)),
        group_(group),
        world_of_(std::move(world_of)),
        record_(record) {}
  // Wraps a world transport.
  RecordingTransport(Transport& world, std::shared_ptr<Ledger> ledger, RankRecord* record)
      : RecordingTransport(nullptr, world, std::move(ledger), 0, identity(world.size()), record) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int host_of(int rank) const override { return inner_.host_of(rank); }

  RequestPtr isend(const BufferView& data, int dst, Tag tag) override {
    const int64_t step = record_->clock + 1;
    record_->clock = step;
    record_->messages += 1;
    record_->bytes += data.bytes().count();
    ledger_->record_send(key(rank(), dst, tag), step);
    return inner_.isend(data, dst, tag);
  }

  RequestPtr irecv(const BufferView& data, int src, Tag tag) override {
    const Ledger::Key k = key(src, rank(), tag);
    const size_t n = ledger_->reserve_receive(k);
    return std::make_unique<Receive>(inner_.irecv(data, src, tag), ledger_, k, n, record_);
  }

  std::unique_ptr<Transport> make_subgroup(std::span<const int> ranks) override {
    std::vector<int> world;
    for (int r : ranks)
      world.push_back(world_of_[static_cast<size_t>(r)]);
    uint64_t group = group_ * 1000003u + 17;  // distinct from the parent even for the same members
    for (int w : world)
      group = group * 1000003u + static_cast<uint64_t>(w) + 1;
    std::unique_ptr<Transport> inner = inner_.subgroup(ranks);
    Transport& ref = *inner;
    return std::make_unique<RecordingTransport>(std::move(inner), ref, ledger_, group, std::move(world),
                                                record_);
  }

  bool native_allreduce(const BufferView& data, ReduceOp op) override {
    return inner_.native_allreduce(data, op);
  }

 private:
  class Receive final : public Request {
   public:
    Receive(RequestPtr inner, std::shared_ptr<Ledger> ledger, Ledger::Key key, size_t n,
            RankRecord* record)
        : inner_(std::move(inner)), ledger_(std::move(ledger)), key_(key), n_(n), record_(record) {}
    bool test() override {
      if (!inner_->test()) return false;
      settle();
      return true;
    }
    void wait() override {
      inner_->wait();
      settle();
    }

   private:
    void settle() {
      if (settled_) return;
      settled_ = true;
      record_->clock = std::max(record_->clock, ledger_->step_of(key_, n_));
    }
    RequestPtr inner_;
    std::shared_ptr<Ledger> ledger_;
    Ledger::Key key_;
    size_t n_;
    RankRecord* record_;
    bool settled_ = false;
  };

  static std::vector<int> identity(int n) {
    std::vector<int> v(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = i;
    return v;
  }
  Ledger::Key key(int src, int dst, Tag tag) const {
    return {group_, world_of_[static_cast<size_t>(src)], world_of_[static_cast<size_t>(dst)], tag};
  }

  std::unique_ptr<Transport> owned_;
  Transport& inner_;
  std::shared_ptr<Ledger> ledger_;
  uint64_t group_;
  std::vector<int> world_of_;
  RankRecord* record_;
};

}  // namespace bagua::testing
