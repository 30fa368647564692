import Foundation

/// Files a crashed process left in a scratch folder (`WORK_DIR`, `UPLOAD_DIR`): a work folder of a
/// job whose worker was killed, a spooled upload whose API was. Removed at start-up, once nothing
/// in them has changed for `age`: a folder shared with a live process keeps what that process is
/// still writing.
public enum Leftovers {
    /// Removes the entries of `directory` whose names start with `prefix` and whose newest file
    /// is older than `age`; returns the names removed.
    @discardableResult
    public static func remove(in directory: URL, prefix: String, olderThan age: TimeInterval, now: Date = Date()) -> [String] {
        let manager = FileManager.default
        guard let names = try? manager.contentsOfDirectory(atPath: directory.path) else { return [] }
        var removed: [String] = []
        for name in names.sorted() where name.hasPrefix(prefix) {
            let entry = directory.appendingPathComponent(name)
            guard let newest = newestModification(entry), now.timeIntervalSince(newest) > age else { continue }
            if (try? manager.removeItem(at: entry)) != nil { removed.append(name) }
        }
        return removed
    }

    /// The latest modification time of `url` and, for a folder, of everything inside it.
    static func newestModification(_ url: URL) -> Date? {
        let keys: [URLResourceKey] = [.contentModificationDateKey]
        var newest = (try? url.resourceValues(forKeys: Set(keys)))?.contentModificationDate
        if let walker = FileManager.default.enumerator(at: url, includingPropertiesForKeys: keys) {
            for case let inner as URL in walker {
                guard let date = (try? inner.resourceValues(forKeys: Set(keys)))?.contentModificationDate else { continue }
                newest = max(newest ?? date, date)
            }
        }
        return newest
    }
}
