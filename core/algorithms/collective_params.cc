#include "core/algorithms/collective_params.h"

#include <string>
#include <utility>
#include <vector>

#include "core/check.h"

namespace bagua {

void add_intra_host_param(ParamSchema& schema, collectives::IntraHostAlgo def) {
  std::vector<std::string> names;
  for (collectives::IntraHostAlgo a :
       {collectives::IntraHostAlgo::kAuto, collectives::IntraHostAlgo::kBinomial,
        collectives::IntraHostAlgo::kChain, collectives::IntraHostAlgo::kNccl})
    names.push_back(collectives::to_string(a));
  schema.add_string("intra_host", collectives::to_string(def),
                    "hierarchical only: how the intra-host reduce and broadcast run (auto: chain or "
                    "binomial tree by size; nccl: NCCL's pipelined ncclReduce / ncclBroadcast)",
                    names);
}

collectives::IntraHostOptions intra_host_options(const Params& params) {
  collectives::IntraHostOptions options;
  options.algo = collectives::parse_intra_host_algo(params.get_string("intra_host"));
  return options;
}

void add_alltoall_param(ParamSchema& schema) {
  schema.add_string("alltoall", collectives::to_string(collectives::AlltoallAlgo::kPairwise),
                    "C_LP_S's alltoall: pairwise (P - 1 sendrecv steps) or nccl (Bagua's: NCCL's "
                    "grouped send and receive to every peer at once)",
                    collectives::alltoall_algo_names());
}

collectives::AlltoallAlgo alltoall_algo(const Params& params) {
  return collectives::parse_alltoall_algo(params.get_string("alltoall"));
}

void add_allgather_param(ParamSchema& schema) {
  schema.add_string("allgather", collectives::to_string(collectives::AllgatherAlgo::kRing),
                    "C_LP_S's allgather: ring (P - 1 bulk-synchronous sendrecv steps) or nccl "
                    "(Bagua's: ncclAllGather, NCCL's pipelined ring on its tuner's channels)",
                    collectives::allgather_algo_names());
}

collectives::AllgatherAlgo allgather_algo(const Params& params) {
  return collectives::parse_allgather_algo(params.get_string("allgather"));
}

void add_allreduce_params(ParamSchema& schema, const std::string& def, const std::string& description) {
  schema.add_string("allreduce", def, description, collectives::allreduce_algo_names());
  add_nccl_protocol_param(schema);
}

collectives::AllreduceAlgo allreduce_algo(const Params& params) {
  return collectives::parse_allreduce_algo(params.get_string("allreduce"));
}

void add_nccl_protocol_param(ParamSchema& schema) {
  ParamSpec spec;
  spec.name = "protocol";
  spec.type = ParamType::kString;
  spec.default_value = collectives::to_string(collectives::kDefaultNcclProtocol);  // unused: optional
  spec.description =
      "allreduce nccl only: NCCL's protocol (NCCL_PROTO): auto (NCCL's tuning model picks per call), "
      "simple, ll or ll128; absent: " +
      collectives::to_string(collectives::kDefaultNcclProtocol);
  spec.choices = collectives::nccl_protocol_option_names();
  spec.presence = ParamPresence::kOptional;
  schema.add(std::move(spec));
}

collectives::NcclProtocolOption nccl_protocol_option(const Params& params,
                                                     collectives::AllreduceAlgo algo) {
  if (!params.has("protocol")) return collectives::kDefaultNcclProtocol;
  if (algo != collectives::AllreduceAlgo::kNccl)
    throw ConfigError("algorithm.protocol: only for \"allreduce\": \"nccl\", got \"allreduce\": \"" +
                      collectives::to_string(algo) + "\"");
  return collectives::parse_nccl_protocol_option(params.get_string("protocol"));
}

}  // namespace bagua
