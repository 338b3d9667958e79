import Foundation
import Hearth
import HearthKernels
import Synchronization
import Testing

@Suite struct WorkerPoolTests {
    @Test(arguments: [1, 2, 3, 8])
    func everyIndexRunsExactlyOnce(threads: Int) {
        let pool = WorkerPool(threadCount: threads)
        for count in [0, 1, 5, 16, 17, 1000] {
            let hits = UnsafeMutableBufferPointer<Int>.allocate(capacity: max(count, 1))
            hits.initialize(repeating: 0)
            defer { hits.deallocate() }
            pool.parallelFor(count, granularity: 4) { range in
                for i in range { hits[i] += 1 }
            }
            #expect(hits.prefix(count).allSatisfy { $0 == 1 })
        }
    }

    @Test func runGivesEachThreadItsIndex() {
        let pool = WorkerPool(threadCount: 4)
        let seen = Mutex<[Int]>([])
        for _ in 0..<200 {
            pool.run { index in seen.withLock { $0.append(index) } }
        }
        let indices = seen.withLock { $0 }
        #expect(indices.count == 800)
        #expect(Set(indices) == [0, 1, 2, 3])
    }

    /// Threads that read ahead while they wait (for the others, then for the next job) still
    /// run every job once, in order, whatever the spans they are given.
    @Test func readingAheadWhileWaitingChangesNoJob() {
        let pool = WorkerPool(threadCount: 3)
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        defer { memory.deallocate() }
        let spans = (0..<3).map { t in [UnsafeRawBufferPointer(rebasing: memory[t * 300_000..<(t + 1) * 300_000])] }
        let ahead = Lookahead(spans: spans + [[UnsafeRawBufferPointer(rebasing: memory[0..<0])]])
        let sums = UnsafeMutableBufferPointer<Int>.allocate(capacity: 3)
        sums.initialize(repeating: 0)
        defer { sums.deallocate() }
        for job in 0..<500 {
            pool.run(ahead: job % 3 == 0 ? nil : ahead) { index in sums[index] += job }
        }
        #expect(Array(sums) == Array(repeating: 500 * 499 / 2, count: 3))
    }

    @Test func chunksPartitionTheRange() {
        for count in [0, 1, 7, 64, 100] {
            for parts in 1...5 {
                let chunks = (0..<parts).map { WorkerPool.chunk(count, part: $0, of: parts, granularity: 16) }
                #expect(chunks.flatMap { Array($0) } == Array(0..<count))
                #expect(chunks.dropLast().allSatisfy { $0.count % 16 == 0 })
            }
        }
    }
}

@Suite struct StreamingTextDecoderTests {
    @Test func charactersSplitAcrossTokensWaitForTheirLastByte() {
        var decoder = StreamingTextDecoder()
        let bytes = Array("é🤖!".utf8)  // 2 + 4 + 1 bytes
        var out: [String] = []
        for b in bytes { out.append(decoder.append([b])) }
        #expect(out == ["", "é", "", "", "", "🤖", "!"])
        #expect(decoder.flush() == "")
    }

    @Test func brokenBytesAreReplacedAtTheEnd() {
        var decoder = StreamingTextDecoder()
        #expect(decoder.append([0x61, 0xF0, 0x9F]) == "a")
        #expect(decoder.flush() == "\u{FFFD}")
    }
}
