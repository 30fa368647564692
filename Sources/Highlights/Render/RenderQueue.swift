import Foundation
import Media

/// What the reading side of a render hands to the writing side, in output order.
enum RenderItem: @unchecked Sendable {  // Frames move between threads; each has one owner at a time.
    /// A segment begins; its audio is exactly `samples` long.
    case segment(samples: Int)
    /// A picture at the output's size (pts set; an HDR one still to be tone-mapped), and the
    /// render's progress once it is written.
    case video(Frame, progress: Double)
    /// Resampled audio starting `offset` samples into the current segment.
    case audio(Frame, offset: Int)
    /// The segment ends; its last picture shows until `end` (output ticks).
    case endSegment(end: Int64)
    /// Every segment is read; `skippedPictures` were never decoded (`SegmentReader.isUnseen`).
    case finished(skippedPictures: Int)
}

/// A small blocking queue between the render's reader thread and its writer: bounded, so decoded
/// pictures never pile up (8 at 1080p is ~24 MB).
final class RenderQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var items: [RenderItem] = []
    private let capacity: Int
    private var closed = false
    private var failure: (any Error)?

    init(capacity: Int) { self.capacity = capacity }

    /// Adds an item, waiting while the queue is full. Returns false once the writer has given up.
    func put(_ item: RenderItem) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !closed { condition.wait() }
        guard !closed else { return false }
        items.append(item)
        condition.broadcast()
        return true
    }

    /// The reader failed: the writer gets `error` after the items already queued.
    func fail(_ error: any Error) {
        condition.lock()
        failure = error
        condition.broadcast()
        condition.unlock()
    }

    /// Takes the next item, waiting for one; throws the reader's failure when nothing is left.
    func take() throws -> RenderItem {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && failure == nil { condition.wait() }
        if items.isEmpty, let failure { throw failure }
        let item = items.removeFirst()
        condition.broadcast()
        return item
    }

    /// The writer has stopped: wake the reader and drop what is queued.
    func close() {
        condition.lock()
        closed = true
        items.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}
