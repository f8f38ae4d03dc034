#include "DynamicBatcher.h"

#include "runtime/src/Status.h"

#include <algorithm>
#include <cstring>

namespace kiln::engine {

using kiln::rt::makeStatus;

namespace {

constexpr int32_t kDefaultMaxBatch = 64;

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

/// Copies the corner both shapes share, from `src` to `dst` (row-major, the
/// same rank): a request into its padded slot of a batch, or the other way.
void copyCorner(const char *src, const std::vector<int64_t> &srcShape, char *dst,
                const std::vector<int64_t> &dstShape, size_t elementSize) {
  const size_t rank = srcShape.size();
  if (rank == 0) {
    std::memcpy(dst, src, elementSize);
    return;
  }
  std::vector<int64_t> common(rank);
  for (size_t d = 0; d < rank; ++d)
    common[d] = std::min(srcShape[d], dstShape[d]);
  if (elementCount(common) == 0)
    return;
  // Every row (all but the last dim) of the common corner, in order.
  std::vector<int64_t> index(rank - 1, 0);
  const size_t rowBytes = common[rank - 1] * elementSize;
  for (;;) {
    int64_t srcOffset = 0, dstOffset = 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      srcOffset = (srcOffset + index[d]) * srcShape[d + 1];
      dstOffset = (dstOffset + index[d]) * dstShape[d + 1];
    }
    std::memcpy(dst + dstOffset * elementSize, src + srcOffset * elementSize, rowBytes);
    size_t d = rank - 1;
    while (d > 0 && ++index[d - 1] == common[d - 1])
      index[--d] = 0;
    if (d == 0)
      return;
  }
}

} // namespace

kiln_status_t DynamicBatcher::create(kiln_model_t *model,
                                     const kiln_batcher_options_t &options,
                                     std::unique_ptr<DynamicBatcher> &out) {
  if (options.max_batch_size < 0 || options.max_queue_delay_us < 0)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "max_batch_size and max_queue_delay_us must be >= 0");
  std::unique_ptr<DynamicBatcher> batcher(new DynamicBatcher());
  batcher->model_ = model;
  int64_t batchBound = INT32_MAX;
  auto readPorts = [&](bool isInput, std::vector<Port> &ports) -> kiln_status_t {
    int32_t count = isInput ? kiln_model_input_count(model) : kiln_model_output_count(model);
    for (int32_t i = 0; i < count; ++i) {
      kiln_io_info_t info;
      if (kiln_status_t status = isInput ? kiln_model_input_info(model, i, &info)
                                         : kiln_model_output_info(model, i, &info))
        return status;
      if (info.rank < 1 || info.dims[0].min > 1)
        return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                          std::string(isInput ? "input '" : "output '") + info.name +
                              "' has no batch dim (dim 0, allowing 1) to batch on");
      if (isInput)
        batchBound = std::min(batchBound, info.dims[0].max);
      ports.push_back({info.name, info.dtype,
                       std::vector<kiln_dim_t>(info.dims, info.dims + info.rank)});
    }
    return nullptr;
  };
  if (kiln_status_t status = readPorts(true, batcher->inputs_))
    return status;
  if (kiln_status_t status = readPorts(false, batcher->outputs_))
    return status;
  batcher->maxBatch_ = (int32_t)std::min<int64_t>(
      options.max_batch_size ? options.max_batch_size : kDefaultMaxBatch, batchBound);
  batcher->maxDelay_ = std::chrono::microseconds(options.max_queue_delay_us);
  if (kiln_status_t status = kiln_session_create(model, &batcher->session_))
    return status;
  batcher->thread_ = std::thread([raw = batcher.get()] { raw->loop(); });
  out = std::move(batcher);
  return nullptr;
}

DynamicBatcher::~DynamicBatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable())
    thread_.join();
  kiln_session_release(session_);
}

kiln_status_t DynamicBatcher::submit(const kiln_tensor_t *inputs, int32_t numInputs,
                                     kiln_batcher_callback_t callback, void *userData) {
  if (numInputs != (int32_t)inputs_.size() || (numInputs > 0 && !inputs))
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "the model has " + std::to_string(inputs_.size()) +
                          " inputs, the request brings " + std::to_string(numInputs));
  auto request = std::make_unique<Request>();
  std::vector<std::pair<const char *, int64_t>> named; // one size per dim name
  for (int32_t i = 0; i < numInputs; ++i) {
    const kiln_tensor_t &tensor = inputs[i];
    const Port &port = inputs_[i];
    std::string what = "input '" + port.name + "'";
    if (tensor.dtype != port.dtype || tensor.rank != (int32_t)port.dims.size())
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        what + ": expected " + kiln_dtype_name(port.dtype) + " of rank " +
                            std::to_string(port.dims.size()) + ", got " +
                            kiln_dtype_name(tensor.dtype) + " of rank " +
                            std::to_string(tensor.rank));
    std::vector<int64_t> shape(tensor.shape, tensor.shape + tensor.rank);
    if (shape[0] != 1)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        what + ": dim 0 is " + std::to_string(shape[0]) +
                            "; a request brings one item (dim 0 of size 1)");
    for (size_t d = 1; d < shape.size(); ++d) {
      const kiln_dim_t &dim = port.dims[d];
      if (shape[d] < dim.min || shape[d] > dim.max)
        return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                          what + ": dim " + std::to_string(d) + " is " +
                              std::to_string(shape[d]) + ", outside [" +
                              std::to_string(dim.min) + ", " + std::to_string(dim.max) + "]");
      if (dim.size >= 0 || !*dim.name)
        continue;
      auto known = std::find_if(named.begin(), named.end(), [&](const auto &entry) {
        return std::strcmp(entry.first, dim.name) == 0;
      });
      if (known == named.end())
        named.emplace_back(dim.name, shape[d]);
      else if (known->second != shape[d])
        return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                          what + ": dim " + std::to_string(d) + " ('" + dim.name +
                              "') is " + std::to_string(shape[d]) +
                              ", another input gives it " + std::to_string(known->second));
    }
    size_t bytes = elementCount(shape) * kiln_dtype_size(tensor.dtype);
    if (tensor.byte_size != bytes || (bytes > 0 && !tensor.data))
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        what + ": " + std::to_string(tensor.byte_size) +
                            " bytes given, its shape needs " + std::to_string(bytes));
    const char *data = static_cast<const char *>(tensor.data);
    request->data.emplace_back(data, data + bytes);
    request->shapes.push_back(std::move(shape));
  }
  request->callback = callback;
  request->userData = userData;
  request->arrival = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(request));
    ++stats_.num_requests;
  }
  changed_.notify_all();
  return nullptr;
}

kiln_batcher_stats_t DynamicBatcher::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  kiln_batcher_stats_t stats = stats_;
  stats.num_waiting = (int32_t)queue_.size();
  return stats;
}

void DynamicBatcher::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty())
      return; // stopping, and nothing left to answer
    // A full batch, or the oldest request's deadline; stopping runs what is
    // queued at once.
    auto deadline = queue_.front()->arrival + maxDelay_;
    changed_.wait_until(lock, deadline, [this] {
      return stopping_ || (int32_t)queue_.size() >= maxBatch_;
    });
    Batch batch;
    while (!queue_.empty() && (int32_t)batch.size() < maxBatch_) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    ++stats_.num_batches;
    stats_.largest_batch = std::max(stats_.largest_batch, (int32_t)batch.size());
    lock.unlock();
    run(batch);
    lock.lock();
  }
}

int64_t DynamicBatcher::sizeByName(const Request &request, const char *name) const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    for (size_t d = 1; d < inputs_[i].dims.size(); ++d)
      if (inputs_[i].dims[d].size < 0 && std::strcmp(inputs_[i].dims[d].name, name) == 0)
        return request.shapes[i][d];
  return -1;
}

kiln_status_t DynamicBatcher::runOnce(const Batch &batch,
                                    std::vector<std::vector<std::vector<char>>> &outputs,
                                    std::vector<std::vector<std::vector<int64_t>>> &shapes) {
  const int64_t count = (int64_t)batch.size();
  // Each input padded to the batch's largest size in every dim.
  std::vector<std::vector<char>> padded(inputs_.size());
  std::vector<std::vector<int64_t>> paddedShapes(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    std::vector<int64_t> &shape = paddedShapes[i];
    shape = batch[0]->shapes[i];
    for (const auto &request : batch)
      for (size_t d = 1; d < shape.size(); ++d)
        shape[d] = std::max(shape[d], request->shapes[i][d]);
    shape[0] = 1;
    const size_t elementSize = kiln_dtype_size(inputs_[i].dtype);
    const size_t slab = elementCount(shape) * elementSize;
    padded[i].assign(std::max<size_t>(slab * count, 1), 0);
    for (int64_t r = 0; r < count; ++r)
      copyCorner(batch[r]->data[i].data(), batch[r]->shapes[i], padded[i].data() + r * slab,
                 shape, elementSize);
    shape[0] = count;
    kiln_tensor_t tensor = {inputs_[i].dtype, (int32_t)shape.size(), shape.data(),
                            padded[i].data(), slab * count};
    if (kiln_status_t status = kiln_session_bind_input(session_, (int32_t)i, &tensor))
      return status;
  }
  if (kiln_status_t status = kiln_session_run(session_))
    return status;

  outputs.assign(count, std::vector<std::vector<char>>(outputs_.size()));
  shapes.assign(count, std::vector<std::vector<int64_t>>(outputs_.size()));
  for (size_t o = 0; o < outputs_.size(); ++o) {
    kiln_tensor_t result;
    if (kiln_status_t status = kiln_session_output(session_, (int32_t)o, &result))
      return status;
    std::vector<int64_t> slabShape(result.shape, result.shape + result.rank);
    slabShape[0] = 1;
    const size_t elementSize = kiln_dtype_size(result.dtype);
    const size_t slab = elementCount(slabShape) * elementSize;
    for (int64_t r = 0; r < count; ++r) {
      // The request's own size in each dim it gave by name; the run's in the rest.
      std::vector<int64_t> shape = slabShape;
      for (size_t d = 1; d < shape.size(); ++d)
        if (outputs_[o].dims[d].size < 0)
          if (int64_t size = sizeByName(*batch[r], outputs_[o].dims[d].name); size >= 0)
            shape[d] = std::min(shape[d], size);
      outputs[r][o].assign(elementCount(shape) * elementSize, 0);
      copyCorner(static_cast<const char *>(result.data) + r * slab, slabShape,
                 outputs[r][o].data(), shape, elementSize);
      shapes[r][o] = std::move(shape);
    }
  }
  return nullptr;
}

void DynamicBatcher::run(Batch &batch) {
  std::vector<std::vector<std::vector<char>>> outputs;
  std::vector<std::vector<std::vector<int64_t>>> shapes;
  kiln_status_t error = nullptr;
  try {
    error = runOnce(batch, outputs, shapes);
  } catch (const std::bad_alloc &) {
    error = makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory while batching");
  }
  if (error && batch.size() > 1) {
    // One bad request must not fail the others: each runs alone.
    kiln_status_free(error);
    for (auto &request : batch) {
      Batch alone;
      alone.push_back(std::move(request));
      run(alone);
    }
    return;
  }
  for (size_t r = 0; r < batch.size(); ++r) {
    Request &request = *batch[r];
    if (!request.callback)
      continue;
    if (error) {
      request.callback(request.userData, error, nullptr, 0);
      continue;
    }
    std::vector<kiln_tensor_t> tensors(outputs_.size());
    for (size_t o = 0; o < outputs_.size(); ++o)
      tensors[o] = {outputs_[o].dtype, (int32_t)shapes[r][o].size(), shapes[r][o].data(),
                    outputs[r][o].data(), outputs[r][o].size()};
    request.callback(request.userData, nullptr, tensors.data(), (int32_t)tensors.size());
  }
  kiln_status_free(error);
}

} // namespace kiln::engine
