import Foundation
import Hearth

/// The contexts one loaded model serves requests in. A request takes a free slot, preferring
/// the one whose last conversation shares the longest beginning with its own, so a follow-up
/// turn finds its tokens cached. Requests beyond the slots wait in a bounded queue, first come
/// first served; beyond that they are refused.
actor SlotPool {
    private struct Slot {
        let context: any GenerationContext
        var lastKey: String = ""
        var busy = false
    }

    private var slots: [Slot]
    private var waiters: [(id: Int, continuation: CheckedContinuation<Int, any Error>)] = []
    private var nextWaiter = 0
    let modelName: String
    let queueLimit: Int

    init(model: any LanguageModel, count: Int, queueLimit: Int) {
        slots = (0..<max(1, count)).map { _ in Slot(context: model.makeContext()) }
        modelName = model.name
        self.queueLimit = queueLimit
    }

    var count: Int { slots.count }
    var busyCount: Int { slots.filter(\.busy).count }
    var waitingCount: Int { waiters.count }

    /// A free slot for a request whose prompt begins with `key`, waiting for one when all are
    /// busy. Throws a 503 when the queue is full, and CancellationError when the waiting task is
    /// cancelled.
    func acquire(key: String) async throws -> (index: Int, context: any GenerationContext) {
        if let index = bestFree(for: key) {
            slots[index].busy = true
            slots[index].lastKey = key
            return (index, slots[index].context)
        }
        guard waiters.count < queueLimit else {
            throw ServerError.busy(model: modelName, slots: slots.count, waiting: waiters.count)
        }
        let id = nextWaiter
        nextWaiter += 1
        let index = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiters.append((id, continuation))
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
        slots[index].lastKey = key
        return (index, slots[index].context)
    }

    /// Gives slot `index` back, straight to the longest-waiting request if there is one.
    func release(_ index: Int) {
        if waiters.isEmpty {
            slots[index].busy = false
        } else {
            waiters.removeFirst().continuation.resume(returning: index)
        }
    }

    private func cancelWaiter(_ id: Int) {
        guard let position = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: position).continuation.resume(throwing: CancellationError())
    }

    private func bestFree(for key: String) -> Int? {
        var best: (index: Int, shared: Int)?
        for (index, slot) in slots.enumerated() where !slot.busy {
            let shared = key.utf8.commonPrefixCount(with: slot.lastKey.utf8)
            if best == nil || shared > best!.shared { best = (index, shared) }
        }
        return best?.index
    }
}

extension Sequence where Element: Equatable {
    func commonPrefixCount<Other: Sequence>(with other: Other) -> Int where Other.Element == Element {
        var count = 0
        for (a, b) in zip(self, other) {
            guard a == b else { break }
            count += 1
        }
        return count
    }
}
