import Foundation
import Hearth

/// The contexts one loaded model serves requests in: how many generations run at once. A
/// request takes the free slot given back longest ago; which tokens it reuses is the engine's
/// to decide (a prompt starts from the longest matching beginning among the model's sequences
/// and its prompt cache, whichever slot it runs in), so slots leave the conversations they
/// held in place as long as they can. Requests beyond the slots wait in a bounded queue, first
/// come first served; beyond that they are refused.
actor SlotPool {
    private struct Slot {
        let context: any GenerationContext
        /// When the slot was last given back (a count of releases), 0 for never.
        var released: UInt64 = 0
        var busy = false
    }

    private var slots: [Slot]
    private var waiters: [(id: Int, continuation: CheckedContinuation<Int, any Error>)] = []
    private var nextWaiter = 0
    private var releases: UInt64 = 0
    let modelName: String
    let queueLimit: Int
    /// Slots it has (fixed when it is made).
    nonisolated let slotCount: Int

    init(model: any LanguageModel, count: Int, queueLimit: Int) {
        slots = (0..<max(1, count)).map { _ in Slot(context: model.makeContext()) }
        modelName = model.name
        self.queueLimit = queueLimit
        slotCount = max(1, count)
    }

    var count: Int { slots.count }
    var busyCount: Int { slots.filter(\.busy).count }
    var waitingCount: Int { waiters.count }

    /// A free slot, waiting for one when all are busy. Throws a 503 when the queue is full,
    /// and CancellationError when the waiting task is cancelled.
    func acquire() async throws -> (index: Int, context: any GenerationContext) {
        let free = slots.indices.filter { !slots[$0].busy }
        if let index = free.min(by: { slots[$0].released < slots[$1].released }) {
            slots[index].busy = true
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
        return (index, slots[index].context)
    }

    /// Gives slot `index` back, straight to the longest-waiting request if there is one.
    func release(_ index: Int) {
        releases += 1
        slots[index].released = releases
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
}
