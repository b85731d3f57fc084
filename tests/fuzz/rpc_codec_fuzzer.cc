// Fuzzes the wire codec (server/rpc_codec.cc) as a server and a client meet it: the input's first
// byte picks a message of fanout.v1, the rest is parsed as that message's wire bytes, and every
// tensor in it goes through CheckTensor and Int64Vector. What they accept must be safe to use:
// a checked tensor's bytes match its shape, an int64 vector has exactly its data's elements.
// The handlers of server/graph_service.cc get their own harness (docs/fuzzing.md).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/check.h"
#include "core/dtype.h"
#include "fanout/v1/graph.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "rpc/rpc_codec.h"

namespace {

namespace v1 = fanout::v1;
using fanout::rpc::CheckTensor;
using fanout::rpc::Int64Vector;

void CheckOne(const v1::Tensor& t) {
  absl::Status checked = CheckTensor(t, "tensor");
  if (checked.ok()) {
    auto dtype = fanout::rpc::FromProtoDType(t.dtype());
    FANOUT_CHECK(dtype.ok());
    FANOUT_CHECK(fanout::rpc::ToProtoDType(*dtype) == t.dtype());
    size_t elements = 1;
    for (int64_t d : t.shape()) elements *= static_cast<size_t>(d);
    FANOUT_CHECK(elements * fanout::core::DTypeSize(*dtype) == t.data().size());
    // Re-encoding what was accepted gives a tensor that is accepted again.
    v1::Tensor copy;
    fanout::rpc::FillTensor(*dtype, std::vector<int64_t>(t.shape().begin(), t.shape().end()),
                               t.data(), &copy);
    FANOUT_CHECK(CheckTensor(copy, "copy").ok());
  }
  auto ids = Int64Vector(t, "ids");
  if (ids.ok()) {
    FANOUT_CHECK(checked.ok());
    FANOUT_CHECK(ids->size() * sizeof(int64_t) == t.data().size());
    v1::Tensor copy;
    fanout::rpc::FillInt64Tensor(*ids, &copy);
    auto again = Int64Vector(copy, "ids");
    FANOUT_CHECK(again.ok() && *again == *ids);
  }
}

// Parses `bytes` as a T and checks the tensors `get` returns from it.
template <typename T, typename Get>
void Check(const char* bytes, int len, Get get) {
  T m;
  if (!m.ParseFromArray(bytes, len)) return;
  for (const v1::Tensor* t : get(m)) CheckOne(*t);
}

using Tensors = std::vector<const v1::Tensor*>;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Protobuf logs every string field with invalid UTF-8; at fuzzing rates that is most of the time.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const char* bytes = reinterpret_cast<const char*>(data + 1);
  int len = static_cast<int>(size - 1);
  switch (data[0] % 10) {
    case 0:  // PullNodeData / PullEdgeData
      Check<v1::PullRequest>(bytes, len, [](const auto& m) { return Tensors{&m.ids()}; });
      break;
    case 1:  // PushNodeData
      Check<v1::PushRequest>(bytes, len, [](const auto& m) { return Tensors{&m.ids(), &m.data()}; });
      break;
    case 2:  // SampleNeighbors
      Check<v1::SampleRequest>(bytes, len, [](const auto& m) { return Tensors{&m.seeds()}; });
      break;
    case 3:  // GetDegrees
      Check<v1::DegreesRequest>(bytes, len, [](const auto& m) { return Tensors{&m.ids()}; });
      break;
    case 4:  // FindEdges
      Check<v1::FindEdgesRequest>(bytes, len, [](const auto& m) { return Tensors{&m.eids()}; });
      break;
    // Answers, as a client (GraphClient) checks them.
    case 5:
      Check<v1::PullResponse>(bytes, len, [](const auto& m) { return Tensors{&m.data()}; });
      break;
    case 6:
      Check<v1::SampleResponse>(bytes, len,
                                [](const auto& m) { return Tensors{&m.src(), &m.dst(), &m.eid()}; });
      break;
    case 7:
      Check<v1::DegreesResponse>(bytes, len, [](const auto& m) { return Tensors{&m.degrees()}; });
      break;
    case 8:
      Check<v1::FindEdgesResponse>(bytes, len, [](const auto& m) { return Tensors{&m.src(), &m.dst()}; });
      break;
    default: {  // a bare tensor, and a status carried through both conversions
      Check<v1::Tensor>(bytes, len, [](const auto& m) { return Tensors{&m}; });
      absl::Status s(static_cast<absl::StatusCode>(len > 0 ? static_cast<uint8_t>(bytes[0]) % 17 : 0),
                     std::string(bytes, static_cast<size_t>(len)));
      absl::Status back = fanout::rpc::FromGrpcStatus(fanout::rpc::ToGrpcStatus(s));
      FANOUT_CHECK(back.code() == s.code());
      break;
    }
  }
  return 0;
}
