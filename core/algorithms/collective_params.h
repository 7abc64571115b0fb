// Collective choices inside an algorithm's parameters: how its hierarchical communicator runs the
// intra-host phases, and how C_LP_S runs its alltoall and its allgather.
//
//   intra_host  "auto" | "binomial" | "chain" | "nccl" (collectives::IntraHostAlgo): the intra-host
//               reduce onto the host's leader and the broadcast back (Bagua's hierarchical_pre and
//               hierarchical_post, ncclReduce and ncclBroadcast; "nccl" is NCCL's pipelined chain).
//               Declared by every algorithm that has a hierarchical mode; unused when flat.
//   alltoall    "pairwise" | "nccl" (collectives::AlltoallAlgo): C_LP_S's scatter. "nccl" is what
//               Bagua's communicator runs, NCCL's grouped send and receive to every peer.
//   allgather   "ring" | "nccl" (collectives::AllgatherAlgo): C_LP_S's gather. "nccl" is what Bagua's
//               communicator runs (allgather_inplace -> Al::Allgather<Al::NCCLBackend> ->
//               ncclAllGather): NCCL's pipelined ring on the channels its tuner picks.
//   allreduce   collectives::allreduce_algo_names(): the full-precision allreduce (gradient_allreduce's,
//               DDP's and Horovod's buckets, QAdam's warm-up); "nccl" is NCCL's, its tuner's choice.
//   protocol    "auto" | "simple" | "ll" | "ll128" (collectives::NcclProtocolOption), optional: which
//               of NCCL's protocols "allreduce": "nccl" runs (NCCL_PROTO); "auto" lets NCCL's tuning
//               model pick per call. Absent: collectives::kDefaultNcclProtocol. Only with "allreduce":
//               "nccl".
// A value outside the choices is a ConfigError naming the parameter's JSON path (ParamSchema).
#pragma once

#include <string>

#include "core/collectives/collectives.h"
#include "core/params.h"

namespace bagua {

// Declares `intra_host` with default `def`.
void add_intra_host_param(ParamSchema& schema, collectives::IntraHostAlgo def);
// The communicator's intra-host options from params' `intra_host` (segment and channels NCCL's).
collectives::IntraHostOptions intra_host_options(const Params& params);

// Declares `alltoall`, default "pairwise".
void add_alltoall_param(ParamSchema& schema);
collectives::AlltoallAlgo alltoall_algo(const Params& params);

// Declares `allgather`, default "ring".
void add_allgather_param(ParamSchema& schema);
collectives::AllgatherAlgo allgather_algo(const Params& params);

// Declares `allreduce` (collectives::allreduce_algo_names(), default `def`, described as `description`)
// and beside it `protocol` (below): the full-precision allreduce an algorithm runs.
void add_allreduce_params(ParamSchema& schema, const std::string& def, const std::string& description);
collectives::AllreduceAlgo allreduce_algo(const Params& params);

// Declares `protocol`, optional (absent from a resolved config that does not give it, so that configs
// written before it resolve and hash as before).
void add_nccl_protocol_param(ParamSchema& schema);
// The protocol for `algo`: params' `protocol` if given, else collectives::kDefaultNcclProtocol. A
// `protocol` beside an allreduce other than "nccl" is a ConfigError naming algorithm.protocol.
collectives::NcclProtocolOption nccl_protocol_option(const Params& params,
                                                     collectives::AllreduceAlgo algo);

}  // namespace bagua
