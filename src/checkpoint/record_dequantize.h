// Internal: the dequantization of mxpack records (NAME.qdata / .scales /
// .tscale with their mxpack.tensor.NAME metadata), planned once per file and
// run in row ranges, shared by DequantizeModel (every output in one buffer)
// and DequantizeCheckpoint (each output streamed to its file).
#ifndef MXPACK_SRC_CHECKPOINT_RECORD_DEQUANTIZE_H_
#define MXPACK_SRC_CHECKPOINT_RECORD_DEQUANTIZE_H_

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/model.h"
#include "mxpack/mx.h"
#include "mxpack/safetensors.h"

namespace mxpack::internal {

// The dtype of dequantized output in `to` (f32, bf16 or f16; the callers
// check it).
inline StDtype DequantizedDtype(Format to) {
  return to == Format::kF32   ? StDtype::kF32
         : to == Format::kF16 ? StDtype::kF16
                              : StDtype::kBF16;
}

// One record to dequantize.
struct RecordJob {
  const QuantizedTensorInfo* info = nullptr;  // in RecordPlan::records
  MxTensorView view;
  StDtype dtype = StDtype::kF32;  // of the output
  Format to = Format::kF32;
  // Bytes of the output, and of one of its rows.
  size_t out_bytes() const { return view.shape.rows * row_bytes(); }
  size_t row_bytes() const { return view.shape.cols * StDtypeSize(dtype); }
};

struct RecordPlan {
  std::vector<QuantizedTensorInfo> records;
  std::vector<RecordJob> jobs;                 // one per record, in order
  std::map<std::string, size_t> job_of_qdata;  // qdata tensor -> job
  std::set<std::string> consumed;              // every record's tensors
};

// The records of `in`, checked (no record shadows a tensor, no tensor is
// claimed twice, every view valid), with their output dtype: `to` (f32,
// bf16 or f16) or each record's original dtype.
absl::StatusOr<RecordPlan> PlanRecordDequantize(
    const SafetensorsView& in, const std::optional<Format>& to);

// Rows [r0, r1) of `job` (r0 a multiple of RecordChunkRows' tile of 128 rows)
// into `out`, their (r1 - r0) * row_bytes() bytes.
absl::Status DequantizeRecordRows(const RecordJob& job, size_t r0, size_t r1,
                                  absl::Span<uint8_t> out, Impl impl);

// The rows of a chunk of `job` for parallel runs: whole multiples of 128
// rows (a chunk's scales are contiguous in both layouts), about 2 MiB of
// output.
size_t RecordChunkRows(const RecordJob& job);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_CHECKPOINT_RECORD_DEQUANTIZE_H_
