// MpiRanks with Open MPI (harness/sweep_mpi.h). Only each rank's main
// thread calls MPI (MPI_THREAD_FUNNELED); tasks run on a pool of threads
// per rank, and each planning step on a thread of its own. Waiting is done
// by polling (MPI_Iprobe every 100 us between waits on the pool, MPI_Test
// on the planning's collectives), never in a blocking MPI call, because
// Open MPI's blocking calls spin and would take a core from the rank's own
// solves, and never return when a rank has died.
#include "harness/sweep_mpi.h"

#include <fmt/format.h>
#include <mpi.h>
#include <omp.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <future>
#include <iostream>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "model/errors.h"
#include "model/json_text.h"
#include "model/stop.h"

namespace remat {

namespace {

// kStopped: a rank received SIGINT or SIGTERM (the int sent); from a
// worker, rank 0 stops the sweep as if it had received it, and from rank
// 0, the worker stops the tasks it holds (model/stop.h).
enum Tag : int { kHello = 1, kTask, kStop, kResult, kHeartbeat, kStopped };

using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::microseconds(100);
// Well under the shortest silence a test allows (REMAT_MPI_RANK_TIMEOUT=3).
constexpr auto kHeartbeatEvery = std::chrono::seconds(1);
// How long a silent rank may stay silent before it is taken for dead, unless
// REMAT_MPI_RANK_TIMEOUT says. Rank 0 waits long for workers, since taking a
// live one for dead runs its tasks twice; workers wait briefly for rank 0,
// since without it their work is lost anyway (mpirun --enable-recovery
// keeps them running) and its main thread does nothing but dispatch.
constexpr std::chrono::duration<double> kWorkerTimeout{60};
constexpr std::chrono::duration<double> kLeadTimeout{10};
// Tasks a worker rank holds beyond one per thread, so that its next task is
// there when one ends instead of a message round trip later (which bounds
// the throughput of short tasks). One: a long task can wait behind another
// on a rank only at the very end of the dispatch order.
constexpr int kLookahead = 1;

// How often the ranks check on each other while they plan (their collectives
// are polled, not waited in).
constexpr auto kPlanPoll = std::chrono::milliseconds(1);

// Runs tasks on `threads` threads of this rank. Each (graph, algorithm run)
// preparation is kept while tasks use it and for a few tasks after (tasks
// of one run tend to arrive together), then released.
class TaskPool {
 public:
  TaskPool(const SweepPlan& plan, const SweepConfig& config, int threads)
      : plan_(plan), config_(config), keep_idle_(2 * threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] { Work(); });
    }
  }
  ~TaskPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void Push(size_t task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(task);
      ++in_flight_;
    }
    work_.notify_one();
  }
  size_t in_flight() {
    std::lock_guard<std::mutex> lock(mutex_);
    return in_flight_;
  }
  // Finished tasks since the last call, after waiting up to kPoll for one.
  std::vector<std::pair<size_t, nlohmann::json>> TakeFinished() {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_cv_.wait_for(lock, kPoll, [this] { return !finished_.empty(); });
    std::vector<std::pair<size_t, nlohmann::json>> out;
    out.swap(finished_);
    in_flight_ -= out.size();
    return out;
  }

 private:
  size_t SlotOf(size_t task) const {
    return plan_.tasks[task].graph * plan_.algorithms.size() +
           plan_.tasks[task].algorithm;
  }
  void Work() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      const size_t task = queue_.front();
      queue_.pop_front();
      const size_t slot = SlotOf(task);
      auto& [preparation, users] = slots_[slot];
      if (!preparation) preparation = std::make_shared<PreparationSlot>();
      ++users;
      idle_.remove(slot);
      std::shared_ptr<PreparationSlot> held = preparation;
      lock.unlock();
      nlohmann::json points;
      try {
        points = SolveTask(plan_, task, config_, held.get());
      } catch (const std::exception& e) {
        points = ErrorPoints(plan_, task, e.what());
      }
      lock.lock();
      if (--slots_[slot].second == 0) {
        idle_.push_back(slot);
        if (idle_.size() > keep_idle_) {
          slots_.erase(idle_.front());
          idle_.pop_front();
        }
      }
      finished_.emplace_back(task, std::move(points));
      finished_cv_.notify_one();
    }
  }

  const SweepPlan& plan_;
  const SweepConfig& config_;
  const size_t keep_idle_;
  std::mutex mutex_;
  std::condition_variable work_, finished_cv_;
  std::deque<size_t> queue_;
  size_t in_flight_ = 0;
  bool stopping_ = false;
  std::vector<std::pair<size_t, nlohmann::json>> finished_;
  std::map<size_t, std::pair<std::shared_ptr<PreparationSlot>, int>> slots_;
  std::list<size_t> idle_;  // slots without users, oldest first
  std::vector<std::thread> threads_;
};

// MPI_Finalize runs at exit, after main has written the error line, if any:
// a rank that failed waits in it for rank 0, which alone writes the line,
// so that mpirun, which ends the job at the first rank to exit non-zero,
// cannot end rank 0 before its line is out. Not once a rank has died:
// MPI_Finalize would wait for it.
bool finalize_at_exit = false;
void FinalizeAtExit() {
  if (finalize_at_exit) MPI_Finalize();
}

class OpenMpiRanks : public MpiRanks {
 public:
  OpenMpiRanks() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    finalize_at_exit = true;
    std::atexit(FinalizeAtExit);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // Every rank fails alike (Together); rank 0 alone says so.
    if (rank_ != 0) std::cerr.rdbuf(nullptr);
    rank_timeout_ = rank_ == 0 ? kWorkerTimeout : kLeadTimeout;
    if (const char* timeout = std::getenv("REMAT_MPI_RANK_TIMEOUT")) {
      rank_timeout_ = std::chrono::duration<double>(std::atof(timeout));
    }
  }
  ~OpenMpiRanks() override {
    if (rank_died_) finalize_at_exit = false;
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  // The step runs on a thread of its own while this (MPI's) thread keeps
  // the heartbeats going: a rank 0 that dies while the ranks plan is
  // noticed by the others as it is during the dispatch, and a rank 0
  // planning a large sweep for minutes is not taken for dead.
  void Together(const std::function<void()>& step) override {
    // OpenMP's thread count is per thread; the step's parallel loops get
    // this thread's.
    const int omp_threads = omp_get_max_threads();
    std::future<void> stepped = std::async(std::launch::async, [&] {
      omp_set_num_threads(omp_threads);
      step();
    });
    while (stepped.wait_for(kPlanPoll) != std::future_status::ready) {
      Listen(/*waiting=*/false);
    }
    std::string error;
    try {
      stepped.get();
    } catch (const InputError& e) {
      error = e.what();
    }
    int failed[2] = {error.empty() ? size_ : rank_, 0}, first[2];
    failed[1] = failed[0];
    MPI_Request request;
    MPI_Iallreduce(failed, first, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD,
                   &request);
    Wait(request);
    if (first[0] == size_) return;
    const std::string message = Broadcast(error, first[0]);
    throw InputError(first[0] == 0
                         ? message
                         : fmt::format("rank {}: {}", first[0], message));
  }

  void CheckSamePlan(const SweepPlan& plan) override {
    std::string mine = fmt::format("{} tasks;", plan.tasks.size());
    for (const GraphSummary& s : plan.summaries) {
      mine += s.name + "=" + s.content_hash + ";";
    }
    const std::string lead = Broadcast(mine, 0);
    Together([&] {
      if (mine == lead) return;
      throw InputError(fmt::format(
          "sweep: this rank's graphs or tasks differ from rank 0's (check "
          "that every host has the same graph files and the same remat)"));
    });
  }

  std::vector<size_t> Run(const SweepPlan& plan,
                          const std::vector<size_t>& todo,
                          const SweepConfig& config, int threads,
                          const TaskDone& done) override {
    if (rank_ == 0 && config.lead_threads >= 0) threads = config.lead_threads;
    TaskPool pool(plan, config, threads);
    if (rank_ != 0) {
      Serve(threads, pool);
      return {};
    }
    return Dispatch(plan, todo, threads, pool, done);
  }

 private:
  std::string Broadcast(const std::string& text, int root) {
    long size = static_cast<long>(text.size());
    MPI_Request request;
    MPI_Ibcast(&size, 1, MPI_LONG, root, MPI_COMM_WORLD, &request);
    Wait(request);
    std::string out = rank_ == root ? text : std::string(size, '\0');
    MPI_Ibcast(out.data(), static_cast<int>(size), MPI_CHAR, root,
               MPI_COMM_WORLD, &request);
    Wait(request);
    return out;
  }

  // Polls a collective until it completes, listening for the other ranks
  // meanwhile: no MPI call returns when a rank has died (under mpirun
  // --enable-recovery), so a blocking one would wait forever.
  void Wait(MPI_Request& request) {
    while (true) {
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done) return;
      Listen(/*waiting=*/true);
      std::this_thread::sleep_for(kPlanPoll);
    }
  }

  // While the ranks plan: rank 0 and each worker send each other a
  // heartbeat every second and take their silence as death. A worker
  // whose rank 0 is silent ends at once (it holds nothing to keep). Rank 0
  // gives up only while `waiting` in a collective, not while its own step
  // may be writing the journal; then the sweep cannot go on without the
  // silent rank, and it ends with an InputError (exit status 2).
  void Listen(bool waiting) {
    const Clock::time_point now = Clock::now();
    if (plan_heard_.empty()) plan_heard_.assign(size_, now);
    if (now - last_sent_ > kHeartbeatEvery) {
      if (rank_ == 0) {
        for (int r = 1; r < size_; ++r) Beat(r);
      } else {
        Beat(0);
      }
      last_sent_ = now;
    }
    int flag = 1;
    while (flag) {
      MPI_Status status;
      MPI_Iprobe(rank_ == 0 ? MPI_ANY_SOURCE : 0, kHeartbeat, MPI_COMM_WORLD,
                 &flag, &status);
      if (!flag) break;
      MPI_Recv(nullptr, 0, MPI_CHAR, status.MPI_SOURCE, kHeartbeat,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      plan_heard_[status.MPI_SOURCE] = now;
    }
    if (rank_ != 0) {
      if (now - plan_heard_[0] > rank_timeout_) LeadSilent("while planning");
      return;
    }
    if (!waiting) return;
    for (int r = 1; r < size_; ++r) {
      if (now - plan_heard_[r] <= rank_timeout_) continue;
      rank_died_ = true;  // MPI_Finalize would wait for it
      throw InputError(fmt::format(
          "sweep: rank {} silent for {:.0f} s while the ranks planned, taken "
          "for dead; the sweep cannot go on without it (rerun it, with "
          "--resume if the journal was written)",
          r, rank_timeout_.count()));
    }
  }

  // Ends a worker rank whose rank 0 went silent. Not a return: the pool's
  // threads (or the planning step's) may be minutes into their work, which
  // would hold up their destructors. Isolated solvers die with this
  // process (PR_SET_PDEATHSIG).
  [[noreturn]] void LeadSilent(const char* when) {
    // std::cerr is muted on this rank (the constructor).
    std::fprintf(
        stderr, "%s\n",
        fmt::format("remat: rank {}: rank 0 silent for {:.0f} s{}{}, "
                    "taken for dead; this rank stops (rerun the "
                    "sweep with --resume: rank 0's journal has "
                    "every point it received)",
                    rank_, rank_timeout_.count(), *when ? " " : "", when)
            .c_str());
    std::fflush(stderr);
    std::_Exit(2);
  }

  struct Worker {
    std::set<size_t> in_flight;
    Clock::time_point last_heard;
    bool dead = false;
  };

  // Rank 0: hands out tasks to free threads (its own first), receives
  // results, and reassigns the tasks of ranks that went silent.
  std::vector<size_t> Dispatch(const SweepPlan& plan,
                               const std::vector<size_t>& todo, int threads,
                               TaskPool& pool, const TaskDone& done) {
    std::vector<size_t> ran(size_);
    std::deque<size_t> pending(todo.begin(), todo.end());
    std::vector<Worker> workers(size_);
    for (Worker& w : workers) w.last_heard = Clock::now();
    std::deque<int> free_slots;  // a worker rank per free thread
    std::set<size_t> retried;
    size_t finished = 0;
    bool stopped = false;
    Clock::time_point last_beat = Clock::now();
    while (finished < todo.size()) {
      // A stop: no task is handed out any more, and the workers stop theirs
      // (their results, which `done` drops, still come back, so that every
      // rank ends with its sends complete).
      if (StopRequested() && !stopped) {
        stopped = true;
        finished += pending.size();
        pending.clear();
        int signal = StopSignal();
        for (int r = 1; r < size_; ++r) {
          if (!workers[r].dead) {
            MPI_Send(&signal, 1, MPI_INT, r, kStopped, MPI_COMM_WORLD);
          }
        }
      }
      while (pool.in_flight() < static_cast<size_t>(threads) &&
             !pending.empty()) {
        pool.Push(pending.front());
        pending.pop_front();
      }
      while (!free_slots.empty() && !pending.empty()) {
        const int w = free_slots.front();
        free_slots.pop_front();
        if (workers[w].dead) continue;
        long task = static_cast<long>(pending.front());
        pending.pop_front();
        workers[w].in_flight.insert(task);
        MPI_Send(&task, 1, MPI_LONG, w, kTask, MPI_COMM_WORLD);
      }
      for (auto& [task, points] : pool.TakeFinished()) {
        done(task, std::move(points));
        ++finished;
        ++ran[0];
      }
      int flag = 1;
      while (flag) {
        MPI_Status status;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
        if (!flag) break;
        Worker& w = workers[status.MPI_SOURCE];
        w.last_heard = Clock::now();
        int count = 0;
        MPI_Get_count(&status, MPI_CHAR, &count);
        std::string message(count, '\0');
        MPI_Recv(message.data(), count, MPI_CHAR, status.MPI_SOURCE,
                 status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (w.dead) continue;  // heard again too late: its tasks moved on
        if (status.MPI_TAG == kStopped) {
          RequestStopFor(std::stoi(message));
        } else if (status.MPI_TAG == kHello) {
          for (int i = std::stoi(message) + kLookahead; i > 0; --i) {
            free_slots.push_back(status.MPI_SOURCE);
          }
        } else if (status.MPI_TAG == kResult) {
          const size_t newline = message.find('\n');
          const size_t task = std::stoul(message.substr(0, newline));
          w.in_flight.erase(task);
          free_slots.push_back(status.MPI_SOURCE);
          done(task, nlohmann::json::parse(message.substr(newline + 1)));
          ++finished;
          ++ran[status.MPI_SOURCE];
        }
      }
      const Clock::time_point now = Clock::now();
      if (now - last_beat > kHeartbeatEvery) {
        for (int r = 1; r < size_; ++r) {
          if (!workers[r].dead) Beat(r);
        }
        last_beat = now;
      }
      for (int r = 1; r < size_; ++r) {
        Worker& w = workers[r];
        if (w.dead || now - w.last_heard < rank_timeout_) continue;
        w.dead = rank_died_ = true;
        std::cerr << fmt::format(
            "remat: rank {} silent for {:.0f} s, taken for dead; its {} "
            "task(s) are handed out again\n",
            r, rank_timeout_.count(), w.in_flight.size());
        for (size_t task : w.in_flight) {
          if (stopped) {
            ++finished;
            continue;
          }
          if (retried.insert(task).second) {
            pending.push_front(task);
            continue;
          }
          done(task, ErrorPoints(plan, task,
                                 fmt::format("rank {} died running this task "
                                             "(the second rank to)",
                                             r)));
          ++finished;
        }
        w.in_flight.clear();
      }
    }
    int died = rank_died_;
    for (int r = 1; r < size_; ++r) {
      if (!workers[r].dead) {
        MPI_Send(&died, 1, MPI_INT, r, kStop, MPI_COMM_WORLD);
      }
    }
    return ran;
  }

  // A worker rank: announces its threads, runs what it is given, sends
  // each result back (which frees a thread for the next task) and a
  // heartbeat when it has been quiet. Ends the process when rank 0 has been
  // silent too long, which no MPI call reports: with mpirun
  // --enable-recovery, the ranks of a dead rank 0 would poll forever.
  void Serve(int threads, TaskPool& pool) {
    SendText(std::to_string(threads), kHello);
    // Results under way, sent without blocking: a result longer than the
    // eager limit waits for rank 0 to receive it, which a dead rank 0 never
    // does. A list, so that each text stays where its send reads it.
    std::list<std::pair<std::string, MPI_Request>> sending;
    Clock::time_point lead_heard = Clock::now();
    bool told_lead = false;
    while (true) {
      std::vector<std::pair<size_t, nlohmann::json>> finished =
          pool.TakeFinished();
      // Stopped by a signal of its own: rank 0 hears of it before any
      // result of a task the stop cut short (MPI keeps the order of one
      // rank's messages to another), and then stops the sweep.
      if (StopRequested() && !told_lead) {
        SendText(std::to_string(StopSignal()), kStopped);
        told_lead = true;
      }
      for (auto& [task, points] : finished) {
        auto& [text, request] = sending.emplace_back(
            fmt::format("{}\n{}", task, DumpJson(points)), MPI_REQUEST_NULL);
        MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0,
                  kResult, MPI_COMM_WORLD, &request);
        last_sent_ = Clock::now();
      }
      sending.remove_if([](std::pair<std::string, MPI_Request>& send) {
        int sent = 0;
        MPI_Test(&send.second, &sent, MPI_STATUS_IGNORE);
        return sent != 0;
      });
      int flag = 1;
      while (flag) {
        MPI_Status status;
        MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
        if (!flag) break;
        lead_heard = Clock::now();
        if (status.MPI_TAG == kStop) {
          int died = 0;
          MPI_Recv(&died, 1, MPI_INT, 0, kStop, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
          rank_died_ = died;
          // Rank 0 stops once it has every result, so these end at once.
          for (auto& [text, request] : sending) {
            MPI_Wait(&request, MPI_STATUS_IGNORE);
          }
          return;
        }
        if (status.MPI_TAG == kHeartbeat) {
          MPI_Recv(nullptr, 0, MPI_CHAR, 0, kHeartbeat, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
          continue;
        }
        if (status.MPI_TAG == kStopped) {
          int signal = 0;
          MPI_Recv(&signal, 1, MPI_INT, 0, kStopped, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
          RequestStopFor(signal);
          told_lead = true;  // it knows
          continue;
        }
        long task = 0;
        MPI_Recv(&task, 1, MPI_LONG, 0, kTask, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        pool.Push(static_cast<size_t>(task));
      }
      if (Clock::now() - lead_heard > rank_timeout_) LeadSilent("");
      if (Clock::now() - last_sent_ > kHeartbeatEvery) {
        Beat(0);
        last_sent_ = Clock::now();
      }
    }
  }

  void SendText(const std::string& text, int tag) {
    MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, tag,
             MPI_COMM_WORLD);
    last_sent_ = Clock::now();
  }

  // A heartbeat, sent without waiting: a rank that died unnoticed never
  // takes it, and it carries nothing to keep.
  static void Beat(int to) {
    MPI_Request request;
    MPI_Isend(nullptr, 0, MPI_CHAR, to, kHeartbeat, MPI_COMM_WORLD, &request);
    MPI_Request_free(&request);
  }

  int rank_ = 0, size_ = 1;
  bool rank_died_ = false;
  // How long the ranks this rank hears from may be silent.
  std::chrono::duration<double> rank_timeout_;
  Clock::time_point last_sent_ = Clock::now();
  // When each rank was last heard from while the ranks planned (Listen).
  std::vector<Clock::time_point> plan_heard_;
};

}  // namespace

std::unique_ptr<MpiRanks> MpiRanks::IfLaunched() {
  if (!LaunchedAsRanks()) return nullptr;
  return std::make_unique<OpenMpiRanks>();
}

}  // namespace remat
