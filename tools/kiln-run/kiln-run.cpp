//===- kiln-run.cpp - Runs a compiled Kiln artifact -----------------------===//
//
// kiln-run MODEL.kiln --input NAME=FILE ... [--output-dir DIR] [--threads N]
//                     [--benchmark N] [--warmup W] [--device auto|cpu|cuda]
// kiln-run --devices
//
// FILE is .npy or an ONNX TensorProto .pb. Outputs are written as
// DIR/<output name>.npy. With --benchmark, N timed runs follow W warm-up runs
// and min/median/p90/p99 latencies are printed. The time to load the artifact
// and create its session is printed as "load". Any error is printed with what
// it concerns and the exit code is 1.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.hpp"
#include "tools/common/TensorFile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace {

struct Options {
  std::string model;
  std::vector<std::pair<std::string, std::string>> inputs;
  std::string outputDir;
  int threads = 0;
  int benchmarkRuns = 0;
  int warmupRuns = 3;
  bool listDevices = false;
  kiln_device_t device = KILN_DEVICE_AUTO;
};

const char *kUsage =
    "usage: kiln-run MODEL.kiln --input NAME=FILE ... [--output-dir DIR]\n"
    "                [--threads N] [--benchmark N] [--warmup W]\n"
    "                [--device auto|cpu|cuda]\n"
    "       kiln-run --devices\n"
    "\n"
    "Runs a Kiln artifact on inputs from .npy or ONNX TensorProto .pb files.\n"
    "  --input NAME=FILE  the value of input NAME (every input is required)\n"
    "  --output-dir DIR   write each output to DIR/<name>.npy\n"
    "  --threads N        worker threads, the caller included (0: one per core)\n"
    "  --benchmark N      time N runs after the warm-up and print latencies\n"
    "  --warmup W         warm-up runs before timing (default 3)\n"
    "  --device D         which of the artifact's codes runs: auto (the GPU's\n"
    "                     where a GPU runs it, else the CPU's; the default),\n"
    "                     cpu or cuda\n"
    "  --devices          list the CUDA devices the runtime sees through the\n"
    "                     CUDA driver (libcuda.so.1, or $KILN_CUDA_DRIVER), or\n"
    "                     say why it sees none\n";

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "kiln-run: error: %s\n", message.c_str());
  std::exit(1);
}

int parseCount(const std::string &flag, const char *text) {
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (!*text || *end || value < 0 || value > 1000000)
    fail(flag + " expects a count between 0 and 1000000, got '" + text + "'");
  return static_cast<int>(value);
}

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--input") {
      std::string spec = value();
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        fail("--input " + spec + ": expected NAME=FILE");
      options.inputs.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    } else if (arg == "--output-dir") {
      options.outputDir = value();
    } else if (arg == "--threads") {
      options.threads = parseCount(arg, value());
    } else if (arg == "--benchmark") {
      options.benchmarkRuns = parseCount(arg, value());
    } else if (arg == "--warmup") {
      options.warmupRuns = parseCount(arg, value());
    } else if (arg == "--device") {
      std::string device = value();
      if (device == "auto")
        options.device = KILN_DEVICE_AUTO;
      else if (device == "cpu")
        options.device = KILN_DEVICE_CPU;
      else if (device == "cuda")
        options.device = KILN_DEVICE_CUDA;
      else
        fail("--device " + device + ": expected auto, cpu or cuda");
    } else if (arg == "--devices") {
      options.listDevices = true;
    } else if (!arg.empty() && arg[0] == '-') {
      fail("unknown option '" + arg + "'\n" + kUsage);
    } else if (options.model.empty()) {
      options.model = arg;
    } else {
      fail("more than one model given: '" + options.model + "' and '" + arg + "'");
    }
  }
  if (options.listDevices) {
    if (!options.model.empty() || !options.inputs.empty())
      fail("--devices lists devices; it runs no model");
    return options;
  }
  if (options.model.empty())
    fail(std::string("no model given\n") + kUsage);
  return options;
}

std::string shapeString(const int64_t *shape, int32_t rank) {
  std::string text = "[";
  for (int32_t i = 0; i < rank; ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// min / max / mean of a float output, for the run summary.
std::string floatStats(const kiln_tensor_t &tensor) {
  size_t count = tensor.byte_size / kiln_dtype_size(tensor.dtype);
  if (count == 0 || (tensor.dtype != KILN_DTYPE_F32 && tensor.dtype != KILN_DTYPE_F64))
    return "";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (size_t i = 0; i < count; ++i) {
    double v = tensor.dtype == KILN_DTYPE_F32 ? static_cast<const float *>(tensor.data)[i]
                                              : static_cast<const double *>(tensor.data)[i];
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  char text[128];
  std::snprintf(text, sizeof(text), "  min %.6g  max %.6g  mean %.6g", lo, hi,
                sum / count);
  return text;
}

double percentile(std::vector<double> sorted, double p) {
  size_t index = static_cast<size_t>(std::ceil(p / 100.0 * sorted.size()));
  return sorted[std::min(sorted.size() - 1, index ? index - 1 : 0)];
}

/// kiln-run --devices: one line per CUDA device, or one saying why there
/// is none (not an error: the CPU still runs every artifact).
int listDevices() {
  int32_t count = 0;
  if (kiln_status_t status = kiln_cuda_devices(nullptr, 0, &count)) {
    std::printf("cuda: %s\n", kiln_status_message(status));
    kiln_status_free(status);
    return 0;
  }
  std::vector<kiln_cuda_device_t> devices(count);
  if (kiln_status_t status = kiln_cuda_devices(devices.data(), count, &count)) {
    std::string message = kiln_status_message(status);
    kiln_status_free(status);
    fail(message);
  }
  if (count == 0)
    std::printf("cuda: no CUDA device: the driver shows none\n");
  // Devices that appeared between the two calls are not listed.
  for (int32_t i = 0; i < std::min<int32_t>(count, devices.size()); ++i)
    std::printf("cuda:%d %s, sm_%d%d, %.1f GiB\n", i, devices[i].name,
                devices[i].compute_capability_major, devices[i].compute_capability_minor,
                devices[i].memory_bytes / double(1 << 30));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  if (options.listDevices)
    return listDevices();
  try {
    kiln::Instance instance(options.threads);
    auto loadStart = std::chrono::steady_clock::now();
    kiln::Model model(instance, options.model, options.device);
    kiln::Session session(model);
    double loadMs = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - loadStart)
                        .count();

    std::vector<kiln::tools::HostTensor> tensors(options.inputs.size());
    std::vector<bool> bound(model.inputCount(), false);
    for (size_t i = 0; i < options.inputs.size(); ++i) {
      const auto &[name, file] = options.inputs[i];
      int32_t index = model.inputIndex(name);
      if (bound[index])
        fail("--input " + name + " is given twice");
      std::string error;
      if (!kiln::tools::readTensorFile(file, tensors[i], error))
        fail(error);
      try {
        session.bindInput(index, tensors[i].dtype, tensors[i].shape,
                          tensors[i].data.data(), tensors[i].data.size());
      } catch (const kiln::Error &error) {
        fail(file + ": " + error.what());
      }
      bound[index] = true;
    }
    std::string missing;
    for (int32_t i = 0; i < model.inputCount(); ++i)
      if (!bound[i])
        missing += std::string(missing.empty() ? "" : ", ") + model.input(i).name;
    if (!missing.empty())
      fail("missing --input for: " + missing);

    auto start = std::chrono::steady_clock::now();
    session.run();
    double firstMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count();

    if (!options.outputDir.empty())
      ::mkdir(options.outputDir.c_str(), 0777);
    const std::string device = model.device();
    // "cpu", "cpu (why the GPU code does not run)" or the GPU.
    const bool onCpu = device.rfind("cpu", 0) == 0;
    const std::string where =
        onCpu ? std::to_string(instance.numThreads()) + " threads, " + instance.kernelIsa() +
                    " kernels" + device.substr(3)
              : "on " + device;
    std::printf("model %s: %d inputs, %d outputs, %s, arena %zu bytes\n",
                options.model.c_str(), model.inputCount(), model.outputCount(),
                where.c_str(), model.arenaBytes());
    for (int32_t i = 0; i < model.outputCount(); ++i) {
      kiln_tensor_t output = session.output(i);
      std::string name = model.output(i).name;
      std::printf("output %s: %s %s%s\n", name.c_str(), kiln_dtype_name(output.dtype),
                  shapeString(output.shape, output.rank).c_str(),
                  floatStats(output).c_str());
      if (options.outputDir.empty())
        continue;
      kiln::tools::HostTensor host;
      host.dtype = output.dtype;
      host.shape.assign(output.shape, output.shape + output.rank);
      const auto *bytes = static_cast<const uint8_t *>(output.data);
      host.data.assign(bytes, bytes + output.byte_size);
      std::replace(name.begin(), name.end(), '/', '_');
      std::string error;
      if (!kiln::tools::writeNpy(options.outputDir + "/" + name + ".npy", host, error))
        fail(error);
    }
    std::printf("load: %.3f ms\n", loadMs);
    std::printf("first run: %.3f ms\n", firstMs);

    if (options.benchmarkRuns > 0) {
      for (int i = 0; i < options.warmupRuns; ++i)
        session.run();
      std::vector<double> times;
      for (int i = 0; i < options.benchmarkRuns; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        session.run();
        times.push_back(std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - t0)
                            .count());
      }
      std::sort(times.begin(), times.end());
      double mean = 0;
      for (double t : times)
        mean += t / times.size();
      // Four decimals: a decode step takes tens of microseconds, and
      // ratios of such times rounded to 1 µs would be off by several percent.
      std::printf("benchmark: %d runs after %d warm-up: min %.4f ms, median "
                  "%.4f ms, p90 %.4f ms, p99 %.4f ms, mean %.4f ms\n",
                  options.benchmarkRuns, options.warmupRuns, times.front(),
                  percentile(times, 50), percentile(times, 90),
                  percentile(times, 99), mean);
    }
  } catch (const kiln::Error &error) {
    fail(error.what());
  }
  return 0;
}
