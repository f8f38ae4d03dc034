//===- Runtime.cpp - The Kiln runtime C API -------------------------------===//
#include "kiln/runtime.h"
#include "runtime/src/Artifact.h"
#include "runtime/src/BufferPool.h"
#include "kiln/abi/dtype.h"
#include "runtime/src/cpu/Gemm.h"
#include "runtime/src/cuda/CudaDriver.h"
#include "runtime/src/cuda/DeviceModel.h"
#include "runtime/src/LinearObserver.h"
#include "runtime/src/Status.h"
#include "runtime/src/ThreadPool.h"
#include "runtime/src/Trap.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>

using kiln::rt::makeStatus;

struct kiln_instance_s {
  std::unique_ptr<kiln::rt::ThreadPool> pool;
};

struct kiln_model_s {
  kiln_instance_t *instance;
  std::unique_ptr<kiln::rt::Artifact> artifact;
  /// The model on its GPU when it runs the artifact's GPU code; released
  /// before the artifact it reads.
  std::unique_ptr<kiln::rt::cuda::DeviceModel> device;
  /// The code it runs: the artifact's GPU code with `device`, else its CPU
  /// code.
  const kiln::rt::Code *code = nullptr;
  /// kiln_model_device's answer.
  std::string deviceDescription;
};

namespace {

struct InputBinding {
  bool bound = false;
  std::vector<int64_t> shape;
  void *data = nullptr;
};

struct OutputBinding {
  void *data = nullptr;
  size_t capacity = 0;
};

struct OutputResult {
  std::vector<int64_t> shape;
  void *data = nullptr;
  size_t byteSize = 0;
};

uint64_t elementCount(const int64_t *shape, size_t rank) {
  uint64_t count = 1;
  for (size_t i = 0; i < rank; ++i)
    count *= static_cast<uint64_t>(shape[i]);
  return count;
}

std::string shapeString(const int64_t *shape, size_t rank) {
  std::string text = "[";
  for (size_t i = 0; i < rank; ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// Copies a strided view of `shape` (element strides) into dense `dst`.
void copyStrided(char *dst, const char *src, const int64_t *shape,
                 const int64_t *strides, size_t rank, size_t elementSize) {
  if (rank == 0) {
    std::memcpy(dst, src, elementSize);
    return;
  }
  uint64_t inner = elementCount(shape + 1, rank - 1);
  for (int64_t i = 0; i < shape[0]; ++i)
    copyStrided(dst + i * inner * elementSize, src + i * strides[0] * elementSize,
                shape + 1, strides + 1, rank - 1, elementSize);
}

bool isRowMajor(const int64_t *shape, const int64_t *strides, size_t rank) {
  int64_t expected = 1;
  for (size_t i = rank; i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected)
      return false;
    expected *= shape[i];
  }
  return true;
}

} // namespace

struct kiln_session_s {
  kiln_model_t *model;
  std::vector<InputBinding> inputs;
  std::vector<OutputBinding> outputBindings;
  /// Valid while hasResults; kept between runs so that their shape vectors
  /// keep their capacity and a run allocates nothing for them.
  std::vector<OutputResult> results;
  std::vector<void *> allocations; // released before the next run and at release
  /// Each symbolic dim name's size in the run being checked (a handful of
  /// names: a linear search beats a map's allocations), kept for its capacity.
  std::vector<std::pair<const std::string *, int64_t>> dimSizes;
  /// The code's intermediate buffers (see kiln-plan-memory): allocated once,
  /// reused by every run; on the GPU, the device session's.
  std::unique_ptr<void, decltype(&std::free)> arena{nullptr, &std::free};
  /// The session's stream and arena on the model's GPU, if it has one.
  std::unique_ptr<kiln::rt::cuda::DeviceSession> device;
  /// One memref descriptor per argument of the code (inputs, weights, arena):
  /// allocated, aligned, offset, sizes, strides (row-major). Those of the
  /// weights and the arena are written once; a run rewrites the inputs'.
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> arguments; // descriptors[i].data()
  std::vector<int64_t> resultDescriptors;
  bool hasResults = false;
  /// kiln_session_set_linear_observer's; its callback is null when off.
  kiln::rt::LinearObserver linearObserver;

  void prepareArguments();
  void describe(size_t slot, const void *data, const std::vector<int64_t> &shape);
  kiln_status_t checkInput(int32_t index, kiln_dtype_t dtype, size_t rank,
                           const int64_t *shape, size_t byteSize) const;
  kiln_status_t run();
  kiln_status_t callEntry(void **arguments, void *results);
  /// Runs `call` (callEntry) on the model's GPU: the inputs copied there,
  /// the results mirrored back into host buffers.
  kiln_status_t runOnDevice(const std::function<kiln_status_t()> &call);
  void releaseResults();
};

kiln_status_t kiln_session_s::callEntry(void **arguments, void *results) {
  kiln::rt::ScopedThreadPool scope(model->instance->pool.get());
  kiln::rt::ScopedLinearObserver observing(&linearObserver);
  kiln::rt::RunBufferTracker buffers;
  kiln::rt::Trapped trapped;
  kiln::rt::callTrapping(model->code->entry, arguments, results, trapped);
  if (trapped.code == KILN_STATUS_OK)
    return nullptr;
  // The buffers the run had allocated so far are not reachable from its
  // results any more.
  buffers.releaseAll();
  return makeStatus(trapped.code, trapped.code == KILN_STATUS_INVALID_ARGUMENT
                                      ? std::string("the inputs are inconsistent: ") +
                                            trapped.message
                                      : std::string(trapped.message));
}

kiln_status_t kiln_session_s::runOnDevice(const std::function<kiln_status_t()> &call) {
  const kiln::rt::Artifact &artifact = *model->artifact;
  std::vector<kiln::rt::cuda::DeviceSession::Input> deviceInputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int64_t> &shape = inputs[i].shape;
    deviceInputs.push_back({inputs[i].data,
                            elementCount(shape.data(), shape.size()) *
                                kiln_dtype_size(artifact.inputs()[i].dtype),
                            descriptors[i].data()});
  }
  std::vector<kiln::rt::cuda::DeviceSession::Output> deviceOutputs;
  size_t word = 0;
  for (const kiln::rt::TensorInfo &output : artifact.outputs()) {
    deviceOutputs.push_back(
        {&resultDescriptors[word], output.dims.size(), kiln_dtype_size(output.dtype)});
    word += 3 + 2 * output.dims.size();
  }
  return device->run(deviceInputs, deviceOutputs, call);
}

kiln_status_t kiln_session_s::checkInput(int32_t index, kiln_dtype_t dtype,
                                         size_t rank, const int64_t *shape,
                                         size_t byteSize) const {
  const kiln::rt::TensorInfo &info = model->artifact->inputs()[index];
  std::string what = "input '" + info.name + "'";
  if (dtype != info.dtype)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      what + ": dtype " + kiln_dtype_name(dtype) +
                          ", the model expects " + kiln_dtype_name(info.dtype));
  if (rank != info.dims.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      what + ": rank " + std::to_string(rank) + " (shape " +
                          shapeString(shape, rank) + "), the model expects rank " +
                          std::to_string(info.dims.size()));
  uint64_t elements = 1;
  for (size_t d = 0; d < rank; ++d) {
    const kiln_dim_t &dim = info.dims[d];
    if (shape[d] < 0)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        what + ": dim " + std::to_string(d) + " is negative");
    if (dim.size >= 0 && shape[d] != dim.size)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        what + ": dim " + std::to_string(d) + " is " +
                            std::to_string(shape[d]) + ", the model expects " +
                            std::to_string(dim.size));
    if (dim.size < 0 && (shape[d] < dim.min || shape[d] > dim.max))
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        what + ": dim " + std::to_string(d) + " ('" + dim.name +
                            "') is " + std::to_string(shape[d]) +
                            ", outside its bounds [" + std::to_string(dim.min) +
                            ", " + std::to_string(dim.max) + "]");
    if (shape[d] > 0 && elements > (uint64_t(1) << 62) / shape[d])
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT, what + ": too many elements");
    elements *= shape[d];
  }
  uint64_t needed;
  if (__builtin_mul_overflow(elements, kiln_dtype_size(dtype), &needed))
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, what + ": too many bytes");
  if (byteSize != needed)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      what + ": " + std::to_string(byteSize) + " bytes given, shape " +
                          shapeString(shape, rank) + " of " + kiln_dtype_name(dtype) +
                          " needs " + std::to_string(needed));
  return nullptr;
}

void kiln_session_s::releaseResults() {
  for (void *allocation : allocations)
    kiln::rt::releaseBuffer(allocation);
  allocations.clear();
  hasResults = false;
}

void kiln_session_s::describe(size_t slot, const void *data,
                              const std::vector<int64_t> &shape) {
  std::vector<int64_t> &words = descriptors[slot];
  words.assign(3 + 2 * shape.size(), 0); // the rank is fixed: no reallocation
  words[0] = words[1] = reinterpret_cast<intptr_t>(data);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    words[3 + d] = shape[d];
    words[3 + shape.size() + d] = stride;
    stride *= shape[d];
  }
  arguments[slot] = words.data();
}

void kiln_session_s::prepareArguments() {
  const kiln::rt::Artifact &artifact = *model->artifact;
  const kiln::rt::Code &code = *model->code;
  size_t numArguments = inputs.size() + code.weights.size() + 1;
  descriptors.resize(numArguments);
  arguments.resize(numArguments);
  for (size_t i = 0; i < code.weights.size(); ++i)
    describe(inputs.size() + i,
             device ? reinterpret_cast<const void *>(model->device->weight(i))
                    : code.weights[i].data,
             code.weights[i].shape);
  // Code without an arena reads no further than the weights.
  describe(numArguments - 1, device ? reinterpret_cast<void *>(device->arena()) : arena.get(),
           {(int64_t)code.arenaBytes});
  size_t resultWords = 0;
  for (const kiln::rt::TensorInfo &output : artifact.outputs())
    resultWords += 3 + 2 * output.dims.size();
  resultDescriptors.resize(resultWords);
}

kiln_status_t kiln_session_s::run() {
  const kiln::rt::Artifact &artifact = *model->artifact;
  // Every input bound, and each symbolic dim name one size across inputs.
  dimSizes.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const kiln::rt::TensorInfo &info = artifact.inputs()[i];
    if (!inputs[i].bound)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "input '" + info.name + "' is not bound");
    for (size_t d = 0; d < info.dims.size(); ++d) {
      const std::string &name = info.dimNames[d];
      if (info.dims[d].size >= 0 || name.empty())
        continue;
      auto known = std::find_if(dimSizes.begin(), dimSizes.end(),
                                [&](const auto &entry) { return *entry.first == name; });
      if (known == dimSizes.end())
        dimSizes.emplace_back(&name, inputs[i].shape[d]);
      else if (known->second != inputs[i].shape[d])
        return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                          "input '" + info.name + "': dim " + std::to_string(d) +
                              " ('" + name + "') is " +
                              std::to_string(inputs[i].shape[d]) +
                              ", but another input gives '" + name + "' size " +
                              std::to_string(known->second));
    }
  }
  releaseResults();

  for (size_t i = 0; i < inputs.size(); ++i)
    describe(i, inputs[i].data, inputs[i].shape);
  std::fill(resultDescriptors.begin(), resultDescriptors.end(), 0);
  auto call = [&] { return callEntry(arguments.data(), resultDescriptors.data()); };
  if (kiln_status_t status = device ? runOnDevice(call) : call())
    return status;

  // Take ownership of the result buffers, each once; inputs, weights and
  // globals are not allocations.
  auto isInput = [&](void *buffer) {
    return std::any_of(inputs.begin(), inputs.end(),
                       [&](const InputBinding &input) { return input.data == buffer; });
  };
  size_t word = 0;
  for (size_t i = 0; i < artifact.outputs().size(); ++i) {
    size_t rank = artifact.outputs()[i].dims.size();
    void *allocated = reinterpret_cast<void *>(resultDescriptors[word]);
    if (allocated && allocated != kiln::rt::kGlobalAllocatedMarker && !artifact.contains(allocated) &&
        !isInput(allocated) &&
        std::find(allocations.begin(), allocations.end(), allocated) ==
            allocations.end())
      allocations.push_back(allocated);
    word += 3 + 2 * rank;
  }

  word = 0;
  results.resize(artifact.outputs().size());
  for (size_t i = 0; i < artifact.outputs().size(); ++i) {
    const kiln::rt::TensorInfo &info = artifact.outputs()[i];
    size_t rank = info.dims.size();
    char *aligned = reinterpret_cast<char *>(resultDescriptors[word + 1]);
    int64_t offset = resultDescriptors[word + 2];
    const int64_t *shape = &resultDescriptors[word + 3];
    const int64_t *strides = shape + rank;
    word += 3 + 2 * rank;
    OutputResult &result = results[i];
    result.shape.assign(shape, shape + rank);
    for (size_t d = 0; d < rank; ++d)
      if (info.dims[d].size >= 0 && shape[d] != info.dims[d].size)
        return makeStatus(KILN_STATUS_INTERNAL,
                          "output '" + info.name + "' has shape " +
                              shapeString(shape, rank) + ", the manifest says dim " +
                              std::to_string(d) + " is " +
                              std::to_string(info.dims[d].size));
    size_t elementSize = kiln_dtype_size(info.dtype);
    result.byteSize = elementCount(result.shape.data(), result.shape.size()) * elementSize;
    const char *source = aligned + offset * elementSize;
    OutputBinding &binding = outputBindings[i];
    bool dense = isRowMajor(shape, strides, rank);
    if (binding.data) {
      if (result.byteSize > binding.capacity)
        return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                          "output '" + info.name + "' of shape " +
                              shapeString(shape, rank) + " needs " +
                              std::to_string(result.byteSize) +
                              " bytes, its bound buffer holds " +
                              std::to_string(binding.capacity));
      result.data = binding.data;
    } else if (dense) {
      result.data = const_cast<char *>(source);
      continue;
    } else {
      result.data = kiln::rt::allocateBuffer(64, result.byteSize);
      if (!result.data)
        return makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED,
                          "output '" + info.name + "': out of memory");
      allocations.push_back(result.data);
    }
    if (result.byteSize == 0)
      continue;
    if (dense)
      std::memcpy(result.data, source, result.byteSize);
    else
      copyStrided(static_cast<char *>(result.data), source, shape, strides, rank,
                  elementSize);
  }
  hasResults = true;
  return nullptr;
}

extern "C" {

size_t kiln_dtype_size(kiln_dtype_t dtype) { return kiln::rt::dtypeSize(dtype); }

const char *kiln_dtype_name(kiln_dtype_t dtype) { return kiln::rt::dtypeName(dtype); }

void kiln_instance_options_init(kiln_instance_options_t *options) {
  if (options)
    options->num_threads = 0;
}

kiln_status_t kiln_instance_create(const kiln_instance_options_t *options,
                                   kiln_instance_t **out_instance) {
  if (!out_instance)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "out_instance is NULL");
  *out_instance = nullptr;
  int32_t threads = options ? options->num_threads : 0;
  if (threads < 0)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "num_threads is " + std::to_string(threads) +
                          "; use 0 for one per core");
  auto *instance = new (std::nothrow) kiln_instance_s();
  if (!instance)
    return makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  try {
    instance->pool = std::make_unique<kiln::rt::ThreadPool>(threads);
  } catch (const std::exception &error) {
    delete instance;
    return makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED,
                      "cannot start " + std::to_string(threads) +
                          " threads: " + error.what());
  }
  *out_instance = instance;
  return nullptr;
}

void kiln_instance_release(kiln_instance_t *instance) { delete instance; }

int32_t kiln_instance_num_threads(const kiln_instance_t *instance) {
  return instance ? instance->pool->size() : 0;
}

const char *kiln_instance_kernel_isa(const kiln_instance_t *instance) {
  return kiln::rt::gemmIsaName(kiln::rt::activeGemmIsa());
}

kiln_status_t kiln_cuda_devices(kiln_cuda_device_t *devices, int32_t capacity,
                                int32_t *count) {
  if (!count || capacity < 0 || (capacity > 0 && !devices))
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_cuda_devices: count must not be NULL, and devices must "
                      "hold capacity >= 0 entries");
  *count = 0;
  std::string error;
  const kiln::rt::cuda::Driver *driver = kiln::rt::cuda::Driver::get(error);
  std::vector<kiln::rt::cuda::DeviceInfo> found;
  if (!driver || !driver->devices(found, error))
    return makeStatus(KILN_STATUS_FAILED_PRECONDITION, "no CUDA device: " + error);
  for (int32_t i = 0; i < capacity && i < static_cast<int32_t>(found.size()); ++i) {
    kiln_cuda_device_t &device = devices[i];
    std::snprintf(device.name, sizeof(device.name), "%s", found[i].name.c_str());
    device.compute_capability_major = found[i].computeCapabilityMajor;
    device.compute_capability_minor = found[i].computeCapabilityMinor;
    device.memory_bytes = found[i].memoryBytes;
  }
  *count = static_cast<int32_t>(found.size());
  return nullptr;
}

void kiln_model_options_init(kiln_model_options_t *options) {
  if (options)
    options->device = KILN_DEVICE_AUTO;
}

kiln_status_t kiln_model_load(kiln_instance_t *instance, const char *path,
                              const kiln_model_options_t *options, kiln_model_t **out_model) {
  if (!instance || !path || !out_model)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_load: instance, path and out_model must not be NULL");
  *out_model = nullptr;
  const kiln_device_t wanted = options ? options->device : KILN_DEVICE_AUTO;
  if (wanted != KILN_DEVICE_AUTO && wanted != KILN_DEVICE_CPU && wanted != KILN_DEVICE_CUDA)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_load: unknown device " + std::to_string(int(wanted)));
  std::unique_ptr<kiln::rt::Artifact> artifact;
  if (kiln_status_t status =
          kiln::rt::Artifact::load(path, instance->pool.get(), artifact))
    return status;
  const kiln::rt::Code *cpu = artifact->cpuCode(), *gpu = artifact->gpuCode();
  if (wanted == KILN_DEVICE_CPU && !cpu)
    return makeStatus(KILN_STATUS_FAILED_PRECONDITION,
                      std::string(path) + ": has no CPU code (kilnc --target=x86,cuda "
                                          "makes an artifact with both)");
  if (wanted == KILN_DEVICE_CUDA && !gpu)
    return makeStatus(KILN_STATUS_FAILED_PRECONDITION,
                      std::string(path) + ": has no GPU code (kilnc --target=cuda or "
                                          "--target=x86,cuda makes it)");
  std::unique_ptr<kiln::rt::cuda::DeviceModel> device;
  std::string description = "cpu";
  if (gpu && wanted != KILN_DEVICE_CPU) {
    if (kiln_status_t status = kiln::rt::cuda::DeviceModel::create(*artifact, device)) {
      // Where it can choose, the model runs the CPU code instead, and says why.
      if (wanted == KILN_DEVICE_CUDA || !cpu)
        return status;
      description =
          std::string("cpu (the GPU code cannot run: ") + kiln_status_message(status) + ")";
      kiln_status_free(status);
    }
  }
  auto *model = new kiln_model_s{instance, std::move(artifact), std::move(device)};
  model->code = model->device ? gpu : cpu;
  model->deviceDescription = model->device ? model->device->deviceName() : description;
  *out_model = model;
  return nullptr;
}

kiln_status_t kiln_model_load_file(kiln_instance_t *instance, const char *path,
                                   kiln_model_t **out_model) {
  return kiln_model_load(instance, path, nullptr, out_model);
}

void kiln_model_release(kiln_model_t *model) { delete model; }

const char *kiln_model_device(const kiln_model_t *model) {
  return model ? model->deviceDescription.c_str() : "";
}

int32_t kiln_model_input_count(const kiln_model_t *model) {
  return model ? model->artifact->inputs().size() : 0;
}

int32_t kiln_model_output_count(const kiln_model_t *model) {
  return model ? model->artifact->outputs().size() : 0;
}

size_t kiln_model_arena_bytes(const kiln_model_t *model) {
  return model ? model->code->arenaBytes : 0;
}

static kiln_status_t ioInfo(const std::vector<kiln::rt::TensorInfo> &list,
                            const char *kind, int32_t index,
                            kiln_io_info_t *out_info) {
  if (!out_info)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "out_info is NULL");
  if (index < 0 || index >= (int32_t)list.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      std::string(kind) + " index " + std::to_string(index) +
                          " is out of range; the model has " +
                          std::to_string(list.size()));
  const kiln::rt::TensorInfo &info = list[index];
  *out_info = {info.name.c_str(), info.dtype, (int32_t)info.dims.size(),
               info.dims.data()};
  return nullptr;
}

kiln_status_t kiln_model_input_info(const kiln_model_t *model, int32_t index,
                                    kiln_io_info_t *out_info) {
  if (!model)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "model is NULL");
  return ioInfo(model->artifact->inputs(), "input", index, out_info);
}

kiln_status_t kiln_model_output_info(const kiln_model_t *model, int32_t index,
                                     kiln_io_info_t *out_info) {
  if (!model)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "model is NULL");
  return ioInfo(model->artifact->outputs(), "output", index, out_info);
}

static int32_t findByName(const std::vector<kiln::rt::TensorInfo> &list,
                          const char *name) {
  for (size_t i = 0; name && i < list.size(); ++i)
    if (list[i].name == name)
      return i;
  return -1;
}

int32_t kiln_model_find_input(const kiln_model_t *model, const char *name) {
  return model ? findByName(model->artifact->inputs(), name) : -1;
}

int32_t kiln_model_find_output(const kiln_model_t *model, const char *name) {
  return model ? findByName(model->artifact->outputs(), name) : -1;
}

kiln_status_t kiln_session_create(kiln_model_t *model,
                                  kiln_session_t **out_session) {
  if (!model || !out_session)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_session_create: model and out_session must not be NULL");
  auto *session = new (std::nothrow) kiln_session_s();
  if (!session)
    return makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  session->model = model;
  // Page-aligned and rounded to pages: the pages a run never touches are
  // never faulted in.
  size_t arenaBytes = model->code->arenaBytes;
  if (model->device) {
    if (kiln_status_t status =
            kiln::rt::cuda::DeviceSession::create(*model->device, arenaBytes, session->device)) {
      delete session;
      return status;
    }
  } else if (arenaBytes > 0) {
    constexpr size_t kPage = 4096;
    void *arena = arenaBytes <= SIZE_MAX - kPage
                      ? std::aligned_alloc(kPage, (arenaBytes + kPage - 1) / kPage * kPage)
                      : nullptr;
    if (!arena) {
      delete session;
      return makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED,
                        "cannot allocate the model's arena of " +
                            std::to_string(arenaBytes) + " bytes");
    }
    session->arena.reset(arena);
  }
  session->inputs.resize(model->artifact->inputs().size());
  session->outputBindings.resize(model->artifact->outputs().size());
  session->prepareArguments();
  *out_session = session;
  return nullptr;
}

void kiln_session_release(kiln_session_t *session) {
  if (!session)
    return;
  session->releaseResults();
  delete session;
}

kiln_status_t kiln_session_bind_input(kiln_session_t *session, int32_t index,
                                      const kiln_tensor_t *tensor) {
  if (!session || !tensor)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_session_bind_input: session and tensor must not be NULL");
  if (index < 0 || index >= (int32_t)session->inputs.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "input index " + std::to_string(index) +
                          " is out of range; the model has " +
                          std::to_string(session->inputs.size()) + " inputs");
  if (tensor->rank < 0 || (tensor->rank > 0 && !tensor->shape))
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "input '" + session->model->artifact->inputs()[index].name +
                          "': a rank of " + std::to_string(tensor->rank) +
                          " needs a shape");
  if (kiln_status_t status = session->checkInput(
          index, tensor->dtype, tensor->rank, tensor->shape, tensor->byte_size))
    return status;
  if (tensor->byte_size > 0 && !tensor->data)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "input '" + session->model->artifact->inputs()[index].name +
                          "': data is NULL");
  InputBinding &binding = session->inputs[index];
  binding.bound = true;
  binding.shape.assign(tensor->shape, tensor->shape + tensor->rank);
  binding.data = tensor->data;
  return nullptr;
}

kiln_status_t kiln_session_bind_output(kiln_session_t *session, int32_t index,
                                       const kiln_tensor_t *tensor) {
  if (!session || !tensor)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_session_bind_output: session and tensor must not be NULL");
  if (index < 0 || index >= (int32_t)session->outputBindings.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "output index " + std::to_string(index) +
                          " is out of range; the model has " +
                          std::to_string(session->outputBindings.size()) +
                          " outputs");
  session->outputBindings[index] = {tensor->data, tensor->byte_size};
  return nullptr;
}

kiln_status_t kiln_session_run(kiln_session_t *session) {
  if (!session)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "session is NULL");
  return session->run();
}

kiln_status_t kiln_session_set_linear_observer(kiln_session_t *session,
                                               kiln_linear_observer_t observer,
                                               void *user_data) {
  if (!session)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "session is NULL");
  session->linearObserver = {observer, user_data, session->model->artifact.get()};
  return nullptr;
}

kiln_status_t kiln_session_output(const kiln_session_t *session, int32_t index,
                                  kiln_tensor_t *out_tensor) {
  if (!session || !out_tensor)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_session_output: session and out_tensor must not be NULL");
  if (!session->hasResults)
    return makeStatus(KILN_STATUS_FAILED_PRECONDITION,
                      "the session has no results: run it first");
  if (index < 0 || index >= (int32_t)session->results.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "output index " + std::to_string(index) + " is out of range");
  const OutputResult &result = session->results[index];
  const kiln::rt::TensorInfo &info = session->model->artifact->outputs()[index];
  *out_tensor = {info.dtype, (int32_t)result.shape.size(), result.shape.data(),
                 result.data, result.byteSize};
  return nullptr;
}

} // extern "C"
