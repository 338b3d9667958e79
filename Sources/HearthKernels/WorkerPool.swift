import Foundation
import Synchronization

/// A fixed set of threads that run one job at a time, split across them.
///
/// Generating a token runs a few hundred small jobs (one per weight matrix), each taking tens of
/// microseconds, so handing work over must cost far less than that: workers spin briefly on an
/// atomic job counter before they sleep, and the calling thread does a share of every job
/// instead of waiting.
public final class WorkerPool: @unchecked Sendable {
    /// Threads that take part in a job, the calling thread included.
    public let threadCount: Int

    private let shared: Shared
    private let runLock = NSLock()

    /// How long a worker spins for the next job before it sleeps.
    static let spinIterations = 20_000

    /// State the workers share with the pool. Workers hold it strongly so that the pool can be
    /// released while they wind down.
    private final class Shared: @unchecked Sendable {
        let generation = Atomic<Int>(0)
        let pending = Atomic<Int>(0)
        let sleepers = Atomic<Int>(0)
        let stopping = Atomic<Bool>(false)
        let condition = NSCondition()
        // Written by the running thread before `generation` is bumped, read by workers after
        // they see the new generation.
        nonisolated(unsafe) var job: ((Int) -> Void)?
        // Published with a job when it names what each thread reads next (see `run(ahead:_:)`).
        nonisolated(unsafe) var ahead: Lookahead?

        func publish() {
            generation.add(1, ordering: .sequentiallyConsistent)
            if sleepers.load(ordering: .sequentiallyConsistent) > 0 {
                condition.lock()
                condition.broadcast()
                condition.unlock()
            }
        }

        func waitForWorkers(reading next: Lookahead.Cursor? = nil) {
            var next = next
            var spins = 0
            while pending.load(ordering: .acquiring) > 0 {
                if next?.step() == true { continue }
                spins += 1
                if spins > WorkerPool.spinIterations { sched_yield() }
            }
        }

        func workerLoop(index: Int) {
            var seen = 0
            var next: Lookahead.Cursor?
            while true {
                var spins = 0
                var current = generation.load(ordering: .acquiring)
                while current == seen {
                    if next?.step() == true {
                        current = generation.load(ordering: .acquiring)
                        continue
                    }
                    spins += 1
                    if spins < WorkerPool.spinIterations {
                        current = generation.load(ordering: .acquiring)
                        continue
                    }
                    condition.lock()
                    sleepers.add(1, ordering: .sequentiallyConsistent)
                    current = generation.load(ordering: .sequentiallyConsistent)
                    while current == seen {
                        condition.wait()
                        current = generation.load(ordering: .sequentiallyConsistent)
                    }
                    sleepers.subtract(1, ordering: .sequentiallyConsistent)
                    condition.unlock()
                }
                seen = current
                if stopping.load(ordering: .acquiring) {
                    pending.subtract(1, ordering: .releasing)
                    return
                }
                job?(index)
                if let ahead { next = ahead.cursor(thread: index) }
                pending.subtract(1, ordering: .releasing)
            }
        }
    }

    /// Creates a pool of `threadCount` threads (at least 1); `threadCount - 1` are started.
    public init(threadCount: Int) {
        self.threadCount = max(1, threadCount)
        let shared = Shared()
        self.shared = shared
        for index in 1..<self.threadCount {
            let thread = Thread { shared.workerLoop(index: index) }
            thread.name = "hearth-worker-\(index)"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    deinit {
        shared.pending.store(threadCount - 1, ordering: .sequentiallyConsistent)
        shared.stopping.store(true, ordering: .sequentiallyConsistent)
        shared.publish()
        shared.waitForWorkers()
    }

    /// Runs `body(threadIndex)` once on each of the pool's threads and returns when all are done.
    /// `threadIndex` runs from 0 (the calling thread) to `threadCount - 1`.
    ///
    /// `ahead` names the memory each thread reads first in the job expected next: a thread that
    /// has finished its share and would only wait (for the others, or for the calling thread's
    /// work between jobs) asks the caches for those bytes meanwhile, so memory keeps streaming
    /// while the threads hand work over.
    public func run(ahead: Lookahead? = nil, _ body: (Int) -> Void) {
        if threadCount == 1 {
            body(0)
            return
        }
        runLock.lock()
        defer { runLock.unlock() }
        withoutActuallyEscaping(body) { body in
            shared.job = body
            shared.ahead = ahead
            shared.pending.store(threadCount - 1, ordering: .sequentiallyConsistent)
            shared.publish()
            body(0)
            shared.waitForWorkers(reading: ahead?.cursor(thread: 0))
            shared.job = nil
            shared.ahead = nil
        }
    }

    /// Splits `0..<count` into one contiguous chunk per thread (chunk boundaries a multiple of
    /// `granularity`) and runs `body(range)` on each non-empty chunk.
    public func parallelFor(_ count: Int, granularity: Int = 1, ahead: Lookahead? = nil, _ body: (Range<Int>) -> Void) {
        let threads = threadCount
        if threads == 1 || count <= granularity {
            if count > 0 { body(0..<count) }
            return
        }
        run(ahead: ahead) { index in
            let range = Self.chunk(count, part: index, of: threads, granularity: granularity)
            if !range.isEmpty { body(range) }
        }
    }

    /// The `part`-th of `parts` contiguous chunks of `0..<count`.
    public static func chunk(_ count: Int, part: Int, of parts: Int, granularity: Int = 1) -> Range<Int> {
        let units = (count + granularity - 1) / granularity
        let lower = min(count, units * part / parts * granularity)
        let upper = min(count, units * (part + 1) / parts * granularity)
        return lower..<upper
    }
}

/// The memory each thread of a pool reads first in a job to come: a few spans per thread,
/// in the order the thread will read them.
public struct Lookahead: @unchecked Sendable {
    /// Spans per thread.
    public let spans: [[UnsafeRawBufferPointer]]

    public init(spans: [[UnsafeRawBufferPointer]]) {
        self.spans = spans
    }

    /// Walks one thread's spans a few cache lines per step.
    struct Cursor {
        let spans: [UnsafeRawBufferPointer]
        var span = 0
        var offset = 0

        /// Bytes asked for per step: short enough that a waiting thread notices its next job
        /// soon after it is published.
        static let stepBytes = 2048

        /// Asks for the next few lines; false once every span has been asked for.
        mutating func step() -> Bool {
            while span < spans.count {
                let current = spans[span]
                if offset < current.count, let base = current.baseAddress {
                    let count = min(Self.stepBytes, current.count - offset)
                    CacheHint.prefetch(base + offset, count: count)
                    offset += count
                    return true
                }
                span += 1
                offset = 0
            }
            return false
        }
    }

    func cursor(thread: Int) -> Cursor? {
        thread < spans.count && !spans[thread].isEmpty ? Cursor(spans: spans[thread]) : nil
    }
}

