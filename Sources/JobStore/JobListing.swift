import Foundation
import MomentsModel
import PostgresNIO

/// Which jobs an operator means: every field narrows the set, and an empty filter means every job.
/// The console keeps it in its URL, bulk actions store it with their audit record (JSON).
public struct JobFilter: Sendable, Equatable, Codable {
    /// Any of these statuses; empty: any status.
    public var statuses: [JobStatus]
    public var errorCode: String?
    public var owner: String?
    /// Part of the uploaded file's name, any case.
    public var fileName: String?
    /// Created at or after.
    public var createdFrom: Date?
    /// Created before.
    public var createdBefore: Date?

    public init(
        statuses: [JobStatus] = [], errorCode: String? = nil, owner: String? = nil, fileName: String? = nil,
        createdFrom: Date? = nil, createdBefore: Date? = nil
    ) {
        self.statuses = statuses
        self.errorCode = errorCode
        self.owner = owner
        self.fileName = fileName
        self.createdFrom = createdFrom
        self.createdBefore = createdBefore
    }

    enum CodingKeys: String, CodingKey {
        case statuses, owner
        case errorCode = "error_code"
        case fileName = "file_name"
        case createdFrom = "created_from"
        case createdBefore = "created_before"
    }

    /// The same filter, narrowed to the statuses an action can act on; nil when it leaves none.
    public func narrowed(to allowed: [JobStatus]) -> JobFilter? {
        var filter = self
        filter.statuses = statuses.isEmpty ? allowed : statuses.filter(allowed.contains)
        return filter.statuses.isEmpty ? nil : filter
    }

    /// The filter in words, for confirmations and the audit log.
    public var summary: String {
        var parts: [String] = []
        if !statuses.isEmpty { parts.append("status " + statuses.map(\.rawValue).joined(separator: " or ")) }
        if let errorCode { parts.append("error \(errorCode)") }
        if let owner { parts.append("owner \(owner)") }
        if let fileName { parts.append("file name containing “\(fileName)”") }
        if let createdFrom { parts.append("created from \(createdFrom.formatted(.iso8601))") }
        if let createdBefore { parts.append("created before \(createdBefore.formatted(.iso8601))") }
        return parts.isEmpty ? "every job" : parts.joined(separator: ", ")
    }

    /// `%` and `_` are literal in what the operator typed.
    var likePattern: String? {
        fileName.map {
            "%"
                + $0.lowercased().replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
                .replacingOccurrences(of: "_", with: "\\_") + "%"
        }
    }
}

/// Where a page of the job list ends: the next page starts after this job (newest first).
public struct JobCursor: Sendable, Equatable, Hashable {
    public var createdAt: Date
    public var id: UUID

    public init(createdAt: Date, id: UUID) {
        self.createdAt = createdAt
        self.id = id
    }

    /// `<microseconds since 1970>_<id>`: opaque to the operator, exact to the microsecond PostgreSQL keeps.
    public var token: String {
        "\(Int64((createdAt.timeIntervalSince1970 * 1_000_000).rounded()))_\(id.uuidString.lowercased())"
    }

    public init?(token: String) {
        let parts = token.split(separator: "_")
        guard parts.count == 2, let micros = Int64(parts[0]), let id = UUID(uuidString: String(parts[1])) else { return nil }
        self.init(createdAt: Date(timeIntervalSince1970: Double(micros) / 1_000_000), id: id)
    }
}

/// One page of the job list.
public struct JobPage: Sendable {
    public var jobs: [JobRecord]
    /// Where the next page starts; nil on the last page.
    public var next: JobCursor?
}

extension JobStore {
    /// Jobs matching `filter`, newest first, `limit` per page, after `cursor`. Every filter is
    /// served by an index (status, error code, owner, file name, creation time), and the cursor
    /// keeps page 1,000 as cheap as page 1 (`scripts/bench-console` measures it on a million rows).
    public func listJobs(_ filter: JobFilter, after cursor: JobCursor? = nil, limit: Int = 50) async throws(JobStoreError) -> JobPage {
        let limit = min(max(limit, 1), 500)
        return try await database("list jobs") { connection, logger in
            try await Self.page(
                of: connection.query(Self.listQuery(filter, after: cursor, limit: limit + 1, explain: false), logger: logger),
                limit: limit)
        }
    }

    /// The jobs of one owner (nil: anonymous use), newest first, a page at a time: what a device
    /// sees of its history (`GET /api/v1/jobs`). Any of `statuses` (empty: all). Served by
    /// `jobs_owner_list` whatever the filter.
    public func ownJobs(
        owner: String?, statuses: [JobStatus] = [], after cursor: JobCursor? = nil,
        limit: Int = 20
    ) async throws(JobStoreError) -> JobPage {
        let limit = min(max(limit, 1), 100)
        let statuses = statuses.isEmpty ? nil : statuses.map(\.rawValue)
        return try await database("list the owner's jobs") { connection, logger in
            // Not `owner IS NOT DISTINCT FROM`, which no index serves: with its values bound, the
            // planner folds this to `owner = '…'` or to `owner IS NULL`, as the console's filters fold.
            try await Self.page(
                of: connection.query(
                    """
                    SELECT \(unescaped: Self.columns) FROM jobs
                    WHERE (owner = \(owner) OR (\(owner)::text IS NULL AND owner IS NULL))
                      AND (\(statuses)::text[] IS NULL OR status = ANY(\(statuses)))
                      AND (\(cursor?.createdAt)::timestamptz IS NULL OR (created_at, id) < (\(cursor?.createdAt), \(cursor?.id)))
                    ORDER BY created_at DESC, id DESC LIMIT \(limit + 1)
                    """, logger: logger), limit: limit)
        }
    }

    /// A page from rows fetched with `limit + 1`: the extra row only says there is a next page.
    private static func page(of rows: PostgresRowSequence, limit: Int) async throws -> JobPage {
        var jobs: [JobRecord] = []
        for try await row in rows { jobs.append(try record(row)) }
        let more = jobs.count > limit
        if more { jobs.removeLast() }
        return JobPage(jobs: jobs, next: more ? jobs.last.map { JobCursor(createdAt: $0.createdAt, id: $0.id) } : nil)
    }

    /// PostgreSQL's `EXPLAIN (ANALYZE, BUFFERS)` of exactly the statement `listJobs` sends.
    public func explainListJobs(_ filter: JobFilter, after cursor: JobCursor? = nil, limit: Int = 50) async throws(JobStoreError) -> String {
        try await database("explain the job list", timeout: .seconds(60)) { connection, logger in
            let rows = try await connection.query(Self.listQuery(filter, after: cursor, limit: limit + 1, explain: true), logger: logger)
            var lines: [String] = []
            for try await line in rows.decode(String.self) { lines.append(line) }
            return lines.joined(separator: "\n")
        }
    }

    /// How many jobs match (a bulk action's confirmation says it before anything happens).
    public func countJobs(_ filter: JobFilter) async throws(JobStoreError) -> Int {
        try await database("count jobs", timeout: .seconds(30)) { connection, logger in
            let rows = try await connection.query(
                """
                SELECT count(*)::int FROM jobs WHERE \(filter: filter)
                """, logger: logger)
            for try await count in rows.decode(Int.self) { return count }
            return 0
        }
    }

    static func listQuery(_ filter: JobFilter, after cursor: JobCursor?, limit: Int, explain: Bool) -> PostgresQuery {
        """
        \(unescaped: explain ? "EXPLAIN (ANALYZE, BUFFERS) " : "")SELECT \(unescaped: Self.columns) FROM jobs
        WHERE \(filter: filter)
          AND (\(cursor?.createdAt)::timestamptz IS NULL OR (created_at, id) < (\(cursor?.createdAt), \(cursor?.id)))
        ORDER BY created_at DESC, id DESC LIMIT \(limit)
        """
    }

}

extension PostgresQuery.StringInterpolation {
    /// The filter as SQL, one predicate per field. Parameters that are NULL fold away when the
    /// statement is planned (an unnamed statement is planned with its values), so each list query
    /// gets the plan of exactly the filters it has.
    mutating func appendInterpolation(filter: JobFilter) {
        let statuses = filter.statuses.isEmpty ? nil : filter.statuses.map(\.rawValue)
        appendLiteral("(")
        appendInterpolation(statuses)
        appendLiteral("::text[] IS NULL OR status = ANY(")
        appendInterpolation(statuses)
        appendLiteral("))")
        predicate(filter.errorCode, cast: "text", "error_code = ")
        predicate(filter.owner, cast: "text", "owner = ")
        predicate(filter.likePattern, cast: "text", "lower(original_filename) LIKE ")
        predicate(filter.createdFrom, cast: "timestamptz", "created_at >= ")
        predicate(filter.createdBefore, cast: "timestamptz", "created_at < ")
    }

    /// ` AND ($1::cast IS NULL OR <condition>$1)`.
    private mutating func predicate<Value: PostgresDynamicTypeEncodable>(_ value: Value?, cast: String, _ condition: String) {
        appendLiteral(" AND (")
        appendInterpolation(value)
        appendLiteral("::\(cast) IS NULL OR \(condition)")
        appendInterpolation(value)
        appendLiteral(")")
    }
}
