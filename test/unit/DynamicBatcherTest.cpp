//===- DynamicBatcherTest.cpp - Dynamic batching against single runs ------===//
//
// Encoders compiled by kilnc at build time (CMake puts them in
// KILN_ENGINE_TEST_DIR) serve single requests of different lengths through
// the dynamic batcher (kiln/engine.hpp), which pads them into batches; each
// request's output must equal a run of the same request alone within 1e-5
// of its largest value.
//
//===----------------------------------------------------------------------===//
#include "kiln/engine.hpp"
#include "test/unit/EngineTestModels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using kiln::test::artifact;
using kiln::test::instance;

/// One encoder request of `length` tokens: input_ids (never 0 or 1, the
/// pad ids of these vocabularies), attention_mask of ones, token_type_ids
/// of zeros, in the model's input order.
struct EncoderRequest {
  std::vector<std::vector<int64_t>> values;
  std::vector<int64_t> shape;
  std::vector<kiln_tensor_t> tensors;

  EncoderRequest(const kiln::Model &model, int64_t length, uint32_t seed) {
    std::mt19937 random(seed);
    shape = {1, length};
    for (int32_t i = 0; i < model.inputCount(); ++i) {
      std::string name = model.input(i).name;
      std::vector<int64_t> v(length, name == "attention_mask" ? 1 : 0);
      if (name == "input_ids")
        for (int64_t &id : v)
          id = 2 + random() % 200;
      values.push_back(std::move(v));
    }
    for (auto &v : values)
      tensors.push_back({KILN_DTYPE_I64, 2, shape.data(), v.data(), v.size() * 8});
  }
};

/// The request run alone: its first output.
std::vector<float> runAlone(const kiln::Model &model, EncoderRequest &request) {
  kiln::Session session(model);
  for (int32_t i = 0; i < model.inputCount(); ++i)
    session.bindInput(i, KILN_DTYPE_I64, request.shape, request.values[i].data(),
                      request.values[i].size() * 8);
  session.run();
  kiln_tensor_t out = session.output(0);
  const float *data = static_cast<const float *>(out.data);
  return std::vector<float>(data, data + out.byte_size / 4);
}

void expectClose(const std::vector<float> &expected,
                 const kiln::DynamicBatcher::Output &actual, const std::string &label) {
  ASSERT_EQ(actual.data.size(), expected.size() * 4) << label;
  float largest = 0, error = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    largest = std::max(largest, std::fabs(expected[i]));
    error = std::max(error, std::fabs(expected[i] - actual.as<float>()[i]));
  }
  EXPECT_LE(error, 1e-5f * largest) << label;
}

class EveryEncoder : public ::testing::TestWithParam<const char *> {};

TEST_P(EveryEncoder, BatchedRequestsMatchSingleRuns) {
  kiln::Model model(instance(), artifact(GetParam()));
  kiln::DynamicBatcher batcher(model, /*maxBatchSize=*/8, /*maxQueueDelayUs=*/20000);
  const int threads = 3, perThread = 4;
  std::vector<std::unique_ptr<EncoderRequest>> requests;
  for (int i = 0; i < threads * perThread; ++i)
    requests.push_back(std::make_unique<EncoderRequest>(model, 1 + (i * 7) % 40, i));
  std::vector<std::future<std::vector<kiln::DynamicBatcher::Output>>> futures(requests.size());
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t)
    clients.emplace_back([&, t] {
      for (int i = t * perThread; i < (t + 1) * perThread; ++i)
        futures[i] = batcher.submit(requests[i]->tensors);
    });
  for (std::thread &client : clients)
    client.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    std::vector<kiln::DynamicBatcher::Output> outputs = futures[i].get();
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(outputs[0].shape[1], requests[i]->shape[1]) << "cut back to its length";
    expectClose(runAlone(model, *requests[i]), outputs[0],
                std::string(GetParam()) + " request " + std::to_string(i));
  }
  kiln_batcher_stats_t stats = batcher.stats();
  EXPECT_EQ(stats.num_requests, requests.size());
  EXPECT_GT(stats.largest_batch, 1) << "requests within 20 ms of each other batch";
  EXPECT_LT(stats.num_batches, requests.size());
}

INSTANTIATE_TEST_SUITE_P(Encoders, EveryEncoder,
                         ::testing::Values("bert_tiny", "hf_roberta_ts17",
                                           "hf_distilbert_dynamo"));

TEST(DynamicBatcherTest, LoneRequestRunsAfterTheDelay) {
  kiln::Model model(instance(), artifact("bert_tiny"));
  kiln::DynamicBatcher batcher(model, 8, 5000);
  EncoderRequest request(model, 9, 1);
  auto future = batcher.submit(request.tensors);
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  expectClose(runAlone(model, request), future.get()[0], "alone");
}

TEST(DynamicBatcherTest, BadRequestFailsAloneInItsBatch) {
  kiln::Model model(instance(), artifact("bert_tiny"));
  kiln::DynamicBatcher batcher(model, 8, 200000);
  std::vector<std::unique_ptr<EncoderRequest>> requests;
  for (int i = 0; i < 4; ++i)
    requests.push_back(std::make_unique<EncoderRequest>(model, 5 + i, 10 + i));
  requests[2]->values[0][1] = 300; // outside bert_tiny's 256-token vocabulary
  std::vector<std::future<std::vector<kiln::DynamicBatcher::Output>>> futures;
  for (auto &request : requests)
    futures.push_back(batcher.submit(request->tensors));
  for (int i = 0; i < 4; ++i) {
    if (i == 2) {
      try {
        futures[i].get();
        ADD_FAILURE() << "the out-of-vocabulary request must fail";
      } catch (const kiln::Error &e) {
        EXPECT_NE(std::string(e.what()).find("gather"), std::string::npos) << e.what();
      }
      continue;
    }
    expectClose(runAlone(model, *requests[i]), futures[i].get()[0],
                "request " + std::to_string(i));
  }
  EXPECT_EQ(batcher.stats().largest_batch, 4) << "the four were one batch first";
}

TEST(DynamicBatcherTest, RefusesRequestsTheModelCannotTake) {
  kiln::Model model(instance(), artifact("bert_tiny"));
  kiln::DynamicBatcher batcher(model);
  EncoderRequest good(model, 4, 1);
  auto expectRefused = [&](std::vector<kiln_tensor_t> tensors, const std::string &fragment) {
    try {
      batcher.submit(tensors);
      ADD_FAILURE() << "expected a refusal naming '" << fragment << "'";
    } catch (const kiln::Error &e) {
      EXPECT_EQ(e.code(), KILN_STATUS_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expectRefused({good.tensors[0]}, "the model has 3 inputs, the request brings 1");
  std::vector<kiln_tensor_t> tensors = good.tensors;
  int64_t two[] = {2, 2};
  tensors[1].shape = two;
  expectRefused(tensors, "input 'attention_mask': dim 0 is 2");
  tensors = good.tensors;
  tensors[2].dtype = KILN_DTYPE_I32;
  expectRefused(tensors, "input 'token_type_ids': expected i64 of rank 2, got i32");
  EncoderRequest tooLong(model, 65, 1); // compiled for sequence <= 64
  expectRefused(tooLong.tensors, "input 'input_ids': dim 1 is 65, outside [1, 64]");
  tensors = good.tensors;
  tensors[0].byte_size = 8;
  expectRefused(tensors, "input 'input_ids': 8 bytes given, its shape needs 32");
  EncoderRequest other(model, 5, 1);
  tensors = good.tensors;
  tensors[1] = other.tensors[1];
  expectRefused(tensors, "dim 1 ('sequence') is 5, another input gives it 4");
}

} // namespace
