//===- TrainTest.cpp - Training data, safetensors, checkpoints, steps -----===//
//
// On the fake training program (FakeTrainProgram.cpp; its folder and data,
// Inputs/fake-train and Inputs/train-data, are written by
// make_fake_train.py): linear regression with mse and SGD with momentum 0.9,
// lr 0.1, batch 2, five samples x = [1,0] [0,1] [1,1] [2,0] [0,2] with
// labels x . [1,2] = 1 2 3 2 4. The expected values are worked out by hand
// in the comments.
//
//===----------------------------------------------------------------------===//
#include "hetpar/runtime/Training.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace hetpar::rt;
namespace fs = std::filesystem;

namespace {

const std::string kInputs = HETPAR_RUNTIME_TEST_INPUTS;

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

HostTensor floats(std::vector<int64_t> shape, std::vector<float> v) {
  HostTensor t{DType::Float32, std::move(shape), {}};
  t.data.resize(v.size() * 4);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

/// A temporary folder holding a copy of the fake training program (out/)
/// and its data (data/).
class TrainTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl =
        (fs::temp_directory_path() / "hetpar-train-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir = tmpl;
    fs::copy(kInputs + "/fake-train", dir + "/out");
    fs::copy(kInputs + "/train-data", dir + "/data");
    fs::copy_file(HETPAR_FAKE_TRAIN, dir + "/out/device_0.cpu.so");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::unique_ptr<Program> load() {
    std::unique_ptr<Program> p;
    Status s = Program::load(dir + "/out", "cpu", p);
    EXPECT_TRUE(s.isOk()) << s.message();
    return p;
  }
  std::unique_ptr<Dataset> data(Program &p, bool shuffle = false,
                                uint64_t seed = 0) {
    std::unique_ptr<Dataset> d;
    Status s = Dataset::open(dir + "/data", p.inputs(),
                             {p.training().batchSize, shuffle, seed}, d);
    EXPECT_TRUE(s.isOk()) << s.message();
    return d;
  }
  /// Runs steps [first, first + n) and returns the losses.
  std::vector<float> train(Program &p, Dataset &d, uint64_t first, int n) {
    std::unique_ptr<Trainer> t;
    Status s = Trainer::create(p, d, t);
    EXPECT_TRUE(s.isOk()) << s.message();
    std::vector<float> losses;
    for (int i = 0; i < n && t; ++i) {
      Trainer::StepResult r;
      s = t->step(first + uint64_t(i), r);
      EXPECT_TRUE(s.isOk()) << s.message();
      losses.push_back(r.loss);
    }
    return losses;
  }
  std::string weights(Program &p) {
    std::string w(p.weightsBytes(), '\0');
    EXPECT_TRUE(p.readWeights(0, w.data(), w.size()).isOk());
    return w;
  }
  std::string openError(const std::vector<TensorInfo> &inputs,
                        int64_t batch = 2) {
    std::unique_ptr<Dataset> d;
    Status s = Dataset::open(dir + "/data", inputs, {batch, false, 0}, d);
    EXPECT_FALSE(s.isOk());
    return s.message();
  }
  std::string dir;
};

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

TEST_F(TrainTest, SafetensorsRoundTrip) {
  SafetensorsFile f;
  f.tensors.push_back({"b", floats({2, 3}, {1, 2, 3, 4, 5, 6})});
  HostTensor step{DType::Int64, {}, std::vector<uint8_t>(8, 0)};
  step.data[0] = 7;
  f.tensors.push_back({"a.step", step});
  f.tensors.push_back({"empty", {DType::Bool, {0}, {}}});
  f.metadata = {{"format", "x"}, {"crc32", "{\"b\": 1}"}};
  std::string path = dir + "/t.safetensors";
  ASSERT_TRUE(writeSafetensors(path, f).isOk());

  // The layout: u64 LE header size (a multiple of 8), then JSON, then the
  // data of "b" (24 bytes) and "a.step" (8 bytes) in that order.
  std::string bytes = readBytes(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 24 + 8);
  EXPECT_EQ(bytes[0] & 0xff, int(n & 0xff));
  EXPECT_NE(bytes.find("\"data_offsets\":[0,24]"), std::string::npos);
  EXPECT_NE(bytes.find("\"dtype\":\"I64\""), std::string::npos);

  SafetensorsFile g;
  Status s = readSafetensors(path, g);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_EQ(g.tensors.size(), 3u);
  // Data order: the 0-byte tensor (offset 32..32) after the others.
  EXPECT_EQ(g.tensors[0].name, "b");
  EXPECT_EQ(g.tensors[0].tensor.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(g.tensors[0].tensor.data, f.tensors[0].tensor.data);
  EXPECT_EQ(g.tensors[1].name, "a.step");
  EXPECT_EQ(g.tensors[1].tensor.dtype, DType::Int64);
  EXPECT_EQ(g.tensors[1].tensor.data[0], 7);
  EXPECT_EQ(g.tensors[2].tensor.dtype, DType::Bool);
  EXPECT_EQ(g.metadata, f.metadata);
}

TEST_F(TrainTest, SafetensorsBadFiles) {
  SafetensorsFile f, g;
  f.tensors.push_back({"w", floats({4}, {1, 2, 3, 4})});
  std::string path = dir + "/t.safetensors";
  ASSERT_TRUE(writeSafetensors(path, f).isOk());
  std::string bytes = readBytes(path);
  writeBytes(path, bytes.substr(0, bytes.size() - 1));
  Status s = readSafetensors(path, g);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("lie outside the 15 data bytes"),
            std::string::npos)
      << s.message();
  writeBytes(path, bytes.substr(0, 12));
  s = readSafetensors(path, g);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
  writeBytes(path, std::string("\x02\0\0\0\0\0\0\0{x", 10));
  s = readSafetensors(path, g);
  EXPECT_NE(s.message().find("not a JSON object"), std::string::npos)
      << s.message();
}

/// A full disk (here: a file size limit) in the middle of a write: an error,
/// the old file unchanged, no temporary file left.
TEST_F(TrainTest, SafetensorsFullDiskKeepsOldFile) {
  std::string path = dir + "/t.safetensors";
  SafetensorsFile small, big;
  small.tensors.push_back({"w", floats({1}, {42})});
  ASSERT_TRUE(writeSafetensors(path, small).isOk());
  std::string before = readBytes(path);
  big.tensors.push_back({"w", floats({65536}, std::vector<float>(65536, 1))});

  struct rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  Status s = writeSafetensors(path, big);
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, oldHandler);

  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("the previous file, if any, is unchanged"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(readBytes(path), before);
  size_t files = 0;
  for (auto &e : fs::directory_iterator(dir))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

TEST_F(TrainTest, SafetensorsRemovesTemporariesOfKilledWriters) {
  std::string path = dir + "/t.safetensors";
  SafetensorsFile file;
  file.tensors.push_back({"w", floats({4}, {1, 2, 3, 4})});
  // A writer killed (SIGKILL) mid-write left its temporary: the pid of a
  // child that has exited and been reaped is certainly gone.
  pid_t child = fork();
  if (child == 0)
    _exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  std::string stale = path + ".tmp." + std::to_string(child);
  std::ofstream(stale) << "half a checkpoint";
  // A live writer's temporary (this process's parent) stays.
  std::string live = path + ".tmp." + std::to_string(getppid());
  std::ofstream(live) << "being written";
  ASSERT_TRUE(writeSafetensors(path, file).isOk());
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  fs::remove(live);
  size_t files = 0;
  for (auto &e : fs::directory_iterator(dir))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

TEST_F(TrainTest, RemoveStaleTemporariesTakesAZombieWriterAsEnded) {
  // mpirun may return while a rank it killed is a zombie: kill(pid, 0)
  // still succeeds on it, yet its temporary is stale.
  pid_t child = fork();
  if (child == 0)
    _exit(0);
  ASSERT_GT(child, 0);
  // Not reaped yet: wait until the child has exited (its /proc state is Z).
  for (int i = 0; i < 200; ++i) {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    if (text.find(") Z") != std::string::npos)
      break;
    usleep(10000);
  }
  std::string zombie = dir + "/c.safetensors.tmp." + std::to_string(child);
  std::ofstream(zombie) << "half a checkpoint";
  // A running writer's temporary stays, also after the wait.
  std::string live = dir + "/c.safetensors.tmp." + std::to_string(getpid());
  std::ofstream(live) << "being written";
  removeStaleTemporaries(dir, /*waitSeconds=*/0.1);
  EXPECT_FALSE(fs::exists(zombie));
  EXPECT_TRUE(fs::exists(live));
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
}

//===----------------------------------------------------------------------===//
// Dataset
//===----------------------------------------------------------------------===//

TEST_F(TrainTest, BatchesInOrderWrapIntoTheNextEpoch) {
  auto p = load();
  auto d = data(*p);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->samples(), 5u);
  std::vector<HostTensor> b;
  // Step 2 (0-based) takes positions 4 and 5: sample 4 and, in epoch 1,
  // sample 0: x = [0,2] [1,0], labels 4 1.
  ASSERT_TRUE(d->batch(2, b).isOk());
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].data, floats({2, 2}, {0, 2, 1, 0}).data);
  EXPECT_EQ(b[1].data, floats({2}, {4, 1}).data);
  EXPECT_EQ(b[0].shape, (std::vector<int64_t>{2, 2}));
}

TEST_F(TrainTest, AReplicaTakesItsRowsOfEachBatch) {
  auto p = load();
  // A data-parallel replica holding row 1 of each batch of 2 (its inputs
  // have 1 row): step 2 takes positions 4 and 5, so this replica position 5,
  // which is sample 0 of epoch 1: x = [1,0], label 1.
  std::vector<TensorInfo> in = p->inputs();
  for (TensorInfo &t : in)
    t.shape[0] = 1;
  DatasetOptions opts{2, false, 0};
  opts.rowOffset = 1;
  opts.rows = 1;
  std::unique_ptr<Dataset> d;
  ASSERT_TRUE(Dataset::open(dir + "/data", in, opts, d).isOk());
  std::vector<HostTensor> b;
  ASSERT_TRUE(d->batch(2, b).isOk());
  EXPECT_EQ(b[0].data, floats({1, 2}, {1, 0}).data);
  EXPECT_EQ(b[1].data, floats({1}, {1}).data);
  // Shuffled, the replicas share one permutation: a replica's row is that
  // row of one device's batch, step after step.
  auto all = data(*p, true, 3);
  DatasetOptions shuffled{2, true, 3};
  shuffled.rowOffset = 1;
  shuffled.rows = 1;
  ASSERT_TRUE(Dataset::open(dir + "/data", in, shuffled, d).isOk());
  std::vector<HostTensor> full;
  for (uint64_t step = 0; step < 6; ++step) {
    ASSERT_TRUE(all->batch(step, full).isOk());
    ASSERT_TRUE(d->batch(step, b).isOk());
    ASSERT_EQ(full[1].data.size(), 2 * sizeof(float));
    EXPECT_TRUE(std::equal(b[1].data.begin(), b[1].data.end(),
                           full[1].data.begin() + sizeof(float)))
        << "step " << step;
  }
  // Rows outside the batch, or inputs of another row count.
  DatasetOptions outside{2, false, 0};
  outside.rowOffset = 1;
  outside.rows = 2;
  EXPECT_EQ(Dataset::open(dir + "/data", in, outside, d).message(),
            "rows [1, 3) are not inside a batch of 2");
  EXPECT_EQ(openError(in), "input 'x' has shape [1,2]: a training input needs "
                           "its 2 rows of the batch on axis 0");
}

TEST_F(TrainTest, APipelineDeviceTakesItsRowsOfEachMicrobatch) {
  auto p = load();
  // A call of a pipeline's step: a batch of 4 as 2 microbatches of 2, and a
  // replica holding row 1 of each (its inputs have 2 rows, stacked). Step 0
  // takes samples 0..3: row 1 of (0, 1) and of (2, 3), samples 1 and 3: x =
  // [0,1] [2,0], labels 2 2. Step 1 takes positions 4..7, samples 4 0 1 2:
  // samples 0 and 2, x = [1,0] [1,1], labels 1 3.
  std::vector<TensorInfo> in = p->inputs();
  for (TensorInfo &t : in)
    t.shape[0] = 2;
  DatasetOptions opts{4, false, 0};
  opts.rowOffset = 1;
  opts.rows = 1;
  opts.chunks = 2;
  std::unique_ptr<Dataset> d;
  ASSERT_TRUE(Dataset::open(dir + "/data", in, opts, d).isOk());
  std::vector<HostTensor> b;
  ASSERT_TRUE(d->batch(0, b).isOk());
  EXPECT_EQ(b[0].data, floats({2, 2}, {0, 1, 2, 0}).data);
  EXPECT_EQ(b[1].data, floats({2}, {2, 2}).data);
  ASSERT_TRUE(d->batch(1, b).isOk());
  EXPECT_EQ(b[0].data, floats({2, 2}, {1, 0, 1, 1}).data);
  EXPECT_EQ(b[1].data, floats({2}, {1, 3}).data);
  // Rows outside a microbatch; a batch that is not whole microbatches.
  opts.rows = 2;
  EXPECT_EQ(Dataset::open(dir + "/data", in, opts, d).message(),
            "rows [1, 3) are not inside a microbatch of 2");
  DatasetOptions uneven{4, false, 0};
  uneven.chunks = 3;
  EXPECT_EQ(Dataset::open(dir + "/data", in, uneven, d).message(),
            "a batch of 4 samples is not 3 equal microbatches");
}

TEST_F(TrainTest, AStageChecksTheFilesOfEveryGraphInput) {
  auto p = load();
  // A first pipeline stage takes x alone; the labels are the last stage's.
  // It still checks labels.npy, so that both stages fail alike on it.
  std::vector<TensorInfo> graph = p->inputs(), in = {graph[0]};
  ASSERT_EQ(graph[1].name, "labels");
  DatasetOptions opts{2, false, 0};
  opts.graphInputs = graph;
  std::unique_ptr<Dataset> d;
  ASSERT_TRUE(Dataset::open(dir + "/data", in, opts, d).isOk());
  EXPECT_EQ(d->samples(), 5u);
  std::vector<HostTensor> b;
  ASSERT_TRUE(d->batch(2, b).isOk());
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].data, floats({2, 2}, {0, 2, 1, 0}).data);
  // Fewer labels than samples of x: the count check sees both files.
  std::string labels = dir + "/data/labels.npy";
  std::string saved = readBytes(labels);
  HostTensor four = floats({4}, {1, 2, 3, 4});
  ASSERT_TRUE(writeNpy(labels, four).isOk());
  EXPECT_EQ(Dataset::open(dir + "/data", in, opts, d).message(),
            labels + ": 4 samples, but " + dir +
                "/data/x.npy has 5 (every file needs the same count)");
  // A missing labels file fails this stage too.
  fs::remove(labels);
  std::string missing = Dataset::open(dir + "/data", in, opts, d).message();
  EXPECT_NE(missing.find(labels), std::string::npos) << missing;
  std::ofstream(labels, std::ios::binary) << saved;
  // An input the graph does not have.
  opts.graphInputs = {graph[0]};
  EXPECT_EQ(
      Dataset::open(dir + "/data", {graph[0], graph[1]}, opts, d).message(),
      "input 'labels' is not among the graph's inputs");
}

TEST_F(TrainTest, ShuffleDependsOnSeedAndEpochOnly) {
  auto p = load();
  auto a = data(*p, true, 7), again = data(*p, true, 7),
       other = data(*p, true, 8);
  std::vector<uint64_t> orderA, orderOther;
  for (uint64_t i = 0; i < 15; ++i) {
    orderA.push_back(a->sampleAt(i));
    orderOther.push_back(other->sampleAt(i));
  }
  // Each epoch is a permutation of the 5 samples.
  for (int e = 0; e < 3; ++e) {
    std::set<uint64_t> seen(orderA.begin() + 5 * e, orderA.begin() + 5 * e + 5);
    EXPECT_EQ(seen.size(), 5u) << "epoch " << e;
  }
  // Random access (backwards) gives the same order: it depends on the
  // position only, not on what was drawn before.
  for (uint64_t i = 15; i-- > 0;)
    EXPECT_EQ(again->sampleAt(i), orderA[i]) << i;
  EXPECT_NE(orderA, orderOther);
  EXPECT_FALSE(
      std::equal(orderA.begin(), orderA.begin() + 5, orderA.begin() + 5) &&
      std::equal(orderA.begin() + 5, orderA.begin() + 10, orderA.begin() + 10));
}

TEST_F(TrainTest, DatasetErrors) {
  auto p = load();
  std::vector<TensorInfo> in = p->inputs();
  // A missing file.
  fs::rename(dir + "/data/labels.npy", dir + "/data/l.npy");
  EXPECT_NE(openError(in).find("cannot read '" + dir +
                               "/data/labels.npy': No such file"),
            std::string::npos);
  fs::rename(dir + "/data/l.npy", dir + "/data/labels.npy");
  // A graph input whose name is no file name is never read from outside
  // the folder.
  for (const char *name : {"../labels", "", "..", "a\\b"}) {
    std::vector<TensorInfo> named = in;
    named[1].name = name;
    EXPECT_EQ(openError(named),
              "input '" + std::string(name) +
                  "' cannot be read from a data folder: its name is not a "
                  "file name (<name>.npy); rename the graph input");
  }
  // A wrong dtype: the labels are float32 but the input says int64.
  std::vector<TensorInfo> wrong = in;
  wrong[1].dtype = DType::Int64;
  EXPECT_EQ(openError(wrong), dir + "/data/labels.npy: dtype float32, "
                                    "expected int64 (input 'labels': samples "
                                    "of int64 [])");
  // A wrong sample shape: x holds samples of [2], the input wants [3].
  wrong = in;
  wrong[0].shape = {2, 3};
  EXPECT_EQ(openError(wrong),
            dir + "/data/x.npy: shape [5,2], expected [N,3] (input 'x': a "
                  "leading sample axis, then samples of float32 [3])");
  // Differing sample counts.
  HostTensor four = floats({4}, {1, 2, 3, 4});
  ASSERT_TRUE(writeNpy(dir + "/data/labels.npy", four).isOk());
  EXPECT_NE(openError(in).find("labels.npy: 4 samples, but " + dir +
                               "/data/x.npy has 5"),
            std::string::npos);
  // Fewer samples than a batch (a program for batches of 8).
  ASSERT_TRUE(
      writeNpy(dir + "/data/labels.npy", floats({5}, {1, 2, 3, 2, 4})).isOk());
  wrong = in;
  wrong[0].shape[0] = wrong[1].shape[0] = 8;
  EXPECT_EQ(openError(wrong, 8),
            dir + "/data: 5 samples, fewer than one batch of 8");
}

//===----------------------------------------------------------------------===//
// Steps and checkpoints
//===----------------------------------------------------------------------===//

TEST_F(TrainTest, StepsMatchTheHandComputation) {
  auto p = load();
  auto d = data(*p);
  // Step 1, x = [1,0] [0,1], y = 1 2, w = 0: err = -1 -2, loss = 5/2 = 2.5,
  //   g = -1 -2, m = -1 -2, w = 0.1 0.2.
  // Step 2, x = [1,1] [2,0], y = 3 2: pred = 0.3 0.2, err = -2.7 -1.8,
  //   loss = (7.29 + 3.24)/2 = 5.265, g = (-2.7 - 3.6, -2.7) = -6.3 -2.7,
  //   m = 0.9 (-1 -2) + g = -7.2 -4.5, w = 0.82 0.65.
  // Step 3, x = [0,2] [1,0], y = 4 1: pred = 1.3 0.82, err = -2.7 -0.18,
  //   loss = (7.29 + 0.0324)/2 = 3.6612.
  std::vector<float> losses = train(*p, *d, 0, 2);
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_NEAR(losses[0], 2.5f, 1e-6);
  EXPECT_NEAR(losses[1], 5.265f, 1e-5);
  float w[2];
  ASSERT_TRUE(p->readWeights(0, w, 8).isOk());
  EXPECT_NEAR(w[0], 0.82f, 1e-6);
  EXPECT_NEAR(w[1], 0.65f, 1e-6);
  int64_t step = -1;
  ASSERT_TRUE(readStepCounter(*p, step).isOk());
  EXPECT_EQ(step, 2);
  EXPECT_NEAR(train(*p, *d, 2, 1)[0], 3.6612f, 1e-5);
}

/// Resumed training reproduces the uninterrupted run's weights bit for bit,
/// in order and shuffled.
TEST_F(TrainTest, ResumeEqualsUninterrupted) {
  for (bool shuffle : {false, true}) {
    auto whole = load();
    auto d1 = data(*whole, shuffle, 3);
    train(*whole, *d1, 0, 7);

    auto first = load();
    auto d2 = data(*first, shuffle, 3);
    train(*first, *d2, 0, 3);
    ASSERT_TRUE(saveCheckpoint(*first, dir + "/ck", 3).isOk());

    auto resumed = load();
    int64_t step = -1;
    Status s = loadCheckpoint(*resumed, dir + "/ck", step);
    ASSERT_TRUE(s.isOk()) << s.message();
    EXPECT_EQ(step, 3);
    auto d3 = data(*resumed, shuffle, 3);
    train(*resumed, *d3, uint64_t(step), 4);
    EXPECT_EQ(weights(*resumed), weights(*whole)) << "shuffle " << shuffle;
  }
}

TEST_F(TrainTest, BadCheckpointsAreRefusedBeforeUploading) {
  auto p = load();
  auto d = data(*p);
  train(*p, *d, 0, 2);
  ASSERT_TRUE(saveCheckpoint(*p, dir + "/ck", 2).isOk());
  std::string path = checkpointPath(dir + "/ck");
  std::string good = readBytes(path);
  auto fresh = load();
  std::string before = weights(*fresh);
  auto refuse = [&](const std::string &bytes) {
    writeBytes(path, bytes);
    int64_t step = -1;
    Status s = loadCheckpoint(*fresh, dir + "/ck", step);
    EXPECT_FALSE(s.isOk());
    EXPECT_EQ(weights(*fresh), before) << "weights changed";
    return s.message();
  };
  // A flipped bit in the last tensor's data.
  std::string corrupt = good;
  corrupt[corrupt.size() - 1] ^= 1;
  EXPECT_NE(refuse(corrupt).find("fails its CRC-32 check"), std::string::npos);
  // Truncated.
  EXPECT_NE(refuse(good.substr(0, good.size() - 4)).find("truncated file?"),
            std::string::npos);
  // Another program's (a fingerprint not this program's) is resliced, and
  // its tensors must be this program's: here 'w' is named 'v'.
  std::string fp = programFingerprint(p->weightTensors());
  std::string foreign = good;
  foreign.replace(foreign.find(fp), 8, "00000000");
  std::string renamed = foreign;
  renamed.replace(renamed.find("\"w\""), 3, "\"v\"");
  renamed.replace(renamed.find("\\\"w\\\""), 5, "\\\"v\\\"");
  EXPECT_NE(refuse(renamed).find("has no tensor 'w'"), std::string::npos);
  // Not a checkpoint at all.
  SafetensorsFile other;
  other.tensors.push_back({"w", floats({2}, {1, 2})});
  ASSERT_TRUE(writeSafetensors(path, other).isOk());
  EXPECT_NE(refuse(readBytes(path)).find("not a HetPar checkpoint"),
            std::string::npos);
  // The same tensors under another fingerprint: resliced, the same values.
  writeBytes(path, foreign);
  int64_t step = -1;
  CheckpointSource source;
  Status s = loadCheckpoint(*fresh, dir + "/ck", step, &source);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_TRUE(source.resliced);
  EXPECT_EQ(step, 2);
  EXPECT_EQ(weights(*fresh), weights(*p));
}

TEST_F(TrainTest, CheckpointHoldsTheStateOnly) {
  auto p = load();
  ASSERT_TRUE(saveCheckpoint(*p, dir + "/ck", 0).isOk());
  SafetensorsFile f;
  ASSERT_TRUE(readSafetensors(checkpointPath(dir + "/ck"), f).isOk());
  std::vector<std::string> names;
  for (const NamedTensor &t : f.tensors)
    names.push_back(t.name);
  // weights.json order, without the constant lr.
  EXPECT_EQ(names, (std::vector<std::string>{"w", "w.momentum_buffer",
                                             "hetpar.step"}));
  EXPECT_EQ(f.metadata["format"], "hetpar-checkpoint");
  EXPECT_EQ(f.metadata["version"], "1");
  EXPECT_EQ(f.metadata["step"], "0");
  EXPECT_EQ(f.metadata["model"], "model.onnx");
  // crc32 of 8 zero bytes (w and its momentum): zlib.crc32(bytes(8)).
  EXPECT_NE(f.metadata["crc32"].find("\"w\":1696784233"), std::string::npos)
      << f.metadata["crc32"];
}

} // namespace

namespace {

/// A checkpoint file holding `values` (float32) of the tensor "t", placed in
/// a whole 4 x 3 x 5 tensor by the layout entry `entry` (none when empty).
void writePiece(const std::string &path, const std::vector<float> &values,
                const std::vector<int64_t> &shape, const std::string &entry) {
  SafetensorsFile file;
  HostTensor t;
  t.shape = shape;
  t.data.resize(values.size() * 4);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  uint32_t crc = uint32_t(crc32_z(0, t.data.data(), t.data.size()));
  file.tensors.push_back({"t", t});
  file.metadata = {{"format", "hetpar-checkpoint"},
                   {"version", "1"},
                   {"step", "7"},
                   {"crc32", "{\"t\": " + std::to_string(crc) + "}"}};
  if (!entry.empty())
    file.metadata["layout"] = "{\"t\": " + entry + "}";
  ASSERT_TRUE(writeSafetensors(path, file).isOk());
}

} // namespace

/// joinCheckpoint and cutFromJoined invert each other: a 4 x 3 x 5 tensor
/// (values 0..59) cut by dimension 1 into 2 + 1 with the first slice's 40
/// elements cut again, ZeRO-1 style, at 17; joined, it is whole; a slice of
/// dimension 2 and a range of it come out as hand-computed.
TEST(CheckpointJoinTest, JoinAndCutAreInverse) {
  std::string dir = ::testing::TempDir() + "hetpar-join";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto at = [](int64_t i, int64_t j, int64_t k) {
    return float(i * 15 + j * 5 + k);
  };
  std::vector<float> slice0, slice1;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 5; ++k)
        (j < 2 ? slice0 : slice1).push_back(at(i, j, k));
  std::string s0 =
      R"("shape": [4, 3, 5], "slice": {"dim": 1, "start": 0, "size": 2})";
  writePiece(dir + "/checkpoint.device0.safetensors",
             {slice0.begin(), slice0.begin() + 17}, {17},
             "{" + s0 + R"(, "offset": 0, "elements": 17})");
  writePiece(dir + "/checkpoint.device1.safetensors",
             {slice0.begin() + 17, slice0.end()}, {23},
             "{" + s0 + R"(, "offset": 17, "elements": 23})");
  writePiece(
      dir + "/checkpoint.device2.safetensors", slice1, {4, 1, 5},
      R"({"shape": [4, 3, 5], "slice": {"dim": 1, "start": 2, "size": 1}})");
  JoinedCheckpoint joined;
  Status s = joinCheckpoint(dir, joined);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(joined.step, 7);
  ASSERT_EQ(joined.files.size(), 3u);
  const HostTensor &whole = joined.tensors.at("t").whole;
  ASSERT_EQ(whole.shape, (std::vector<int64_t>{4, 3, 5}));
  for (int64_t e = 0; e < 60; ++e)
    EXPECT_EQ(reinterpret_cast<const float *>(whole.data.data())[e], float(e));

  // Indices 1..3 of dimension 2 (4 x 3 x 3 = 36 elements), elements 5..34.
  TensorPlacement p;
  p.wholeShape = {4, 3, 5};
  p.sliceDim = 2;
  p.sliceStart = 1;
  p.sliceSize = 3;
  p.offset = 5;
  p.elements = 30;
  HostTensor cut;
  s = cutFromJoined(joined, "t", p, DType::Float32, {30}, cut);
  ASSERT_TRUE(s.isOk()) << s.message();
  std::vector<float> want;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 1; k < 4; ++k)
        want.push_back(at(i, j, k));
  for (int64_t e = 0; e < 30; ++e)
    EXPECT_EQ(reinterpret_cast<const float *>(cut.data.data())[e],
              want[size_t(5 + e)]);

  // Without device 1's file, its 23 elements are missing.
  fs::remove(dir + "/checkpoint.device1.safetensors");
  ASSERT_TRUE(joinCheckpoint(dir, joined).isOk());
  p = TensorPlacement();
  p.wholeShape = {4, 3, 5};
  s = cutFromJoined(joined, "t", p, DType::Float32, {4, 3, 5}, cut);
  EXPECT_NE(s.message().find("does not hold all of 't'"), std::string::npos)
      << s.message();
  // Device 3's file with `values` placed by `entry` makes the join fail
  // with `message`.
  auto refused = [&](const std::vector<float> &values, const char *entry,
                     const char *message) {
    writePiece(dir + "/checkpoint.device3.safetensors", values, {4, 1, 5},
               entry);
    Status st = joinCheckpoint(dir, joined);
    EXPECT_NE(st.message().find(message), std::string::npos) << st.message();
  };
  // A file that disagrees on elements another holds is not one checkpoint.
  refused(std::vector<float>(20, -1.0f),
          R"({"shape": [4, 3, 5], "slice": {"dim": 1, "start": 2, "size": 1}})",
          "hold different values of the same elements");
  // A layout entry outside the whole tensor is named.
  refused(slice1,
          R"({"shape": [4, 3, 5], "slice": {"dim": 1, "start": 3, "size": 1}})",
          "lies outside [4,3,5]");
  // A whole shape whose element count overflows is refused, not allocated.
  refused(slice1,
          R"({"shape": [4294967296, 4294967296, 5], "slice": {"dim": 1,)"
          R"( "start": 2, "size": 1}})",
          "is not a tensor shape");
  fs::remove_all(dir);
}
