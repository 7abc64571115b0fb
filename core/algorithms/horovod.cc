#include "core/algorithms/horovod.h"

#include "core/algorithms/collective_params.h"
#include "core/algorithms/tags.h"
#include "core/collectives/nccl.h"
#include "core/ops.h"

namespace bagua {

namespace {

Bytes tensor_bytes(const Bucket& b) {
  return Bytes(static_cast<int64_t>(b.count * sizeof(float)));
}

}  // namespace

std::vector<FusedGroup> fuse_tensors(const std::vector<Bucket>& buckets, int first, int end,
                                     Bytes threshold) {
  std::vector<FusedGroup> groups;
  int i = first;
  while (i < end) {
    FusedGroup group{i, i + 1};
    Bytes bytes = tensor_bytes(buckets[static_cast<size_t>(i)]);
    ++i;
    while (i < end && bytes + tensor_bytes(buckets[static_cast<size_t>(i)]) <= threshold) {
      bytes += tensor_bytes(buckets[static_cast<size_t>(i)]);
      group.end = ++i;
    }
    groups.push_back(group);
  }
  return groups;
}

ParamSchema Horovod::schema() {
  ParamSchema s;
  // InitializeHorovodOnce (horovod/common/operations.cc): SetTensorFusionThresholdBytes(128 * 1024 *
  // 1024) unless HOROVOD_FUSION_THRESHOLD is set; SetCycleTimeMs(1) unless HOROVOD_CYCLE_TIME is set.
  s.add_int("fusion_threshold_bytes", int64_t{128} << 20, "HOROVOD_FUSION_THRESHOLD, in bytes", 0);
  s.add_double("cycle_time_ms", 1.0, "HOROVOD_CYCLE_TIME: milliseconds between background cycles", 0.0);
  // HOROVOD_HIERARCHICAL_ALLREDUCE is off unless set (operations.cc).
  s.add_bool("hierarchical", false,
             "HOROVOD_HIERARCHICAL_ALLREDUCE: intra-host reduce-scatter, allreduce across hosts, "
             "intra-host allgather");
  // hvd.DistributedOptimizer(compression=Compression.none) (horovod/torch/optimizer.py).
  s.add_string("compression", "none", "gradient compression: none or fp16", {"none", "fp16"});
  add_allreduce_params(s, "nccl", "allreduce algorithm of a fused group (hierarchical: across hosts)");
  // The controller the negotiation runs on. horovodrun launches with mpirun whenever Horovod was built
  // with MPI (run_controller in horovod/runner/launch.py: mpi_run if mpi_built(), else gloo_run), and
  // the MPI controller's bitwise allreduce is MPI_Allreduce (MPIController::CrossRankBitwiseAnd,
  // horovod/common/mpi/mpi_controller.cc): Open MPI's choice for its size ("mpi_tuned"). The Gloo
  // controller's is gloo::allreduce (GlooController::CrossRankBitwiseAnd,
  // horovod/common/gloo/gloo_controller.cc), whose unspecified algorithm is its ring
  // (gloo/allreduce.cc): 2 (P - 1) steps.
  s.add_string("controller", "mpi",
               "the negotiation's allreduce: mpi (MPI_Allreduce, Open MPI's choice by size) or gloo "
               "(Gloo's ring)",
               {"mpi", "gloo"});
  return s;
}

Horovod::Horovod(const Params& params, const AlgorithmDeps& deps)
    : threshold_(Bytes(params.get_int("fusion_threshold_bytes"))),
      cycle_(Time::ms(params.get_double("cycle_time_ms"))),
      hierarchical_(params.get_bool("hierarchical")),
      fp16_(params.get_string("compression") == "fp16"),
      algo_(allreduce_algo(params)),
      protocol_(nccl_protocol_option(params, algo_)),
      negotiation_(params.get_string("controller") == "gloo" ? collectives::AllreduceAlgo::kRing
                                                             : collectives::AllreduceAlgo::kMpiTuned),
      ready_flag_(Buffer::host(DType::kI64, 1)) {
  if (fp16_) cast_ = compressor_factory(deps.compressors, "fp16", Params{}, false)();
}

std::vector<Bucket> Horovod::buckets(const std::vector<Layer>& layers, Bytes /*budget*/) const {
  return make_buckets(layers, Bytes(0));  // one tensor per layer
}

void Horovod::init(TrainState& s) {
  Transport& world = s.ctx.transport();
  last_cycle_.reset();
  if (!hierarchical_) return;
  const HostLayout layout = host_layout(world);
  if (!layout.uniform())
    throw ConfigError("horovod: hierarchical needs the same number of ranks on every host");
  intra_ = world.subgroup(layout.hosts[static_cast<size_t>(layout.my_host)]);
  std::vector<int> cross;
  for (const std::vector<int>& host : layout.hosts)
    cross.push_back(host[static_cast<size_t>(layout.local_rank)]);
  cross_ = world.subgroup(cross);
}

void Horovod::before_forward(TrainState& s) {
  // The communication stream is idle here (after_backward waited for it).
  arrived_.clear();
  for (size_t i = 0; i < s.buckets.size(); ++i)
    arrived_.push_back(s.ctx.make_event());
}

void Horovod::on_bucket_ready(TrainState& s, const Bucket& b) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = b.index + 1;
  }
  arrived_[static_cast<size_t>(b.index)]->set();
  if (b.index == 0) s.comm.submit([this, &s] { run_cycles(s); });
}

void Horovod::run_cycles(TrainState& s) {
  Clock& clock = s.ctx.clock();
  Transport& world = s.ctx.transport();
  const int tensors = static_cast<int>(s.buckets.size());
  int done = 0;
  while (done < tensors) {
    // RunLoopOnce: sleep until cycle_time after the previous cycle's start; the loop has kept
    // cycling while idle, so the next cycle is the first last + k cycle_time not before now.
    const Time now = clock.now();
    if (last_cycle_ && cycle_ > Time::zero()) {
      Time next = *last_cycle_ + cycle_;
      if (next < now) {
        const int64_t k = (now - *last_cycle_).nanoseconds() / cycle_.nanoseconds();
        next = *last_cycle_ + cycle_ * k;
        if (next < now) next += cycle_;
      }
      if (next > now) clock.sleep(next - now);
    }
    last_cycle_ = clock.now();

    // negotiate: the tensors ready on every rank.
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_flag_.as<int64_t>()[0] = ready_;
    }
    collectives::allreduce(world, ready_flag_, ReduceOp::kMin, tags::bucket(tags::kControl, 0),
                           negotiation_);
    const int agreed = static_cast<int>(ready_flag_.as<int64_t>()[0]);

    // fuse, allreduce.
    for (const FusedGroup& g : fuse_tensors(s.buckets, done, agreed, threshold_)) {
      const Bucket& first = s.buckets[static_cast<size_t>(g.first)];
      const Bucket& last = s.buckets[static_cast<size_t>(g.end - 1)];
      const BufferView fused = s.grads.slice(last.offset, first.offset + first.count - last.offset);
      TraceScope scope(s.ctx,
                       "horovod fused " + std::to_string(g.first) + ".." + std::to_string(g.end - 1),
                       "comm", 1);
      const bool copies = g.end - g.first > 1;
      const Work copy_cost{0, Bytes(2 * fused.bytes().count()), Time::zero()};  // read + write
      if (copies) clock.compute(copy_cost);                                     // MemcpyInFusionBuffer
      allreduce_group(s, fused, tags::bucket(tags::kGradient, g.first));
      if (copies) clock.compute(copy_cost);  // MemcpyOutFusionBuffer
    }
    // A cycle that found nothing new on this rank either: the loop polls until a tensor arrives
    // (with a cycle time of 0 Horovod spins; here the stream waits for the next tensor, which is
    // when the spinning would next find one).
    if (agreed == done) {
      int local = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        local = ready_;
      }
      if (local == done) arrived_[static_cast<size_t>(done)]->wait();
    }
    done = agreed;
  }
}

void Horovod::allreduce_group(TrainState& s, const BufferView& fused, Tag tag) {
  Transport& world = s.ctx.transport();
  Clock& clock = s.ctx.clock();
  // fp16: the group cast to fp16 (Compression.fp16.compress), summed in fp16, cast back.
  Buffer wire;
  BufferView data = fused;
  if (fp16_) {
    wire = Buffer::like(fused, DType::kU8,
                        static_cast<size_t>(cast_->encoded_bytes(fused.count()).count()));
    timed_encode(clock, *cast_, fused, wire);
    data = wire.view().reinterpret(DType::kF16);
  }
  if (!hierarchical_) {
    collectives::allreduce(world, data, ReduceOp::kSum, tag, algo_, protocol_);
  } else {
    // ncclReduceScatter on the host, the allreduce of this rank's chunk across hosts, ncclAllGather
    // (NCCL's ring under Simple, with its step latency).
    collectives::PipelineOptions ring;
    ring.step_latency = collectives::nccl_step_latency(collectives::nccl_topology(*intra_),
                                                       collectives::NcclAlgo::kRing,
                                                       collectives::NcclProtocol::kSimple);
    collectives::pipelined_reduce_scatter(*intra_, data, ReduceOp::kSum, tag, ring);
    const collectives::ChunkRange mine =
        collectives::chunk_range(data.count(), intra_->size(), intra_->rank());
    collectives::allreduce(*cross_, data.slice(mine.offset, mine.count), ReduceOp::kSum, tag, algo_,
                           protocol_);
    collectives::pipelined_allgather(*intra_, data, tag, ring);
  }
  if (fp16_) timed_decode(clock, *cast_, wire, fused);
  scale(fused, 1.0 / world.size());  // Average: postscale_factor = 1 / size
}

void Horovod::after_backward(TrainState& s) {
  s.comm.synchronize();
}

}  // namespace bagua
