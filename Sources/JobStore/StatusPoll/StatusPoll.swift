import Foundation
import Logging
import MomentsModel
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// The status poll's read: the device behind a token and its job, in one prepared statement.
///
/// Apps poll `GET /api/v1/jobs/{id}/status` every two seconds while a highlight is made, so this is
/// most of the API's traffic. One round trip checks the token (known, not revoked) and reads the
/// job only if that device owns it; nothing is cached, so a revoked token is refused by the next
/// poll and the answer is the row as it is now.
public enum PolledJob: Sendable, Equatable {
    /// The token is not known, or was revoked.
    case unknownToken
    /// No such job, or another owner's: the two are answered alike.
    case notFound
    case found(JobStatusRow)
}

/// The columns `/status` shows.
public struct JobStatusRow: Sendable, Equatable {
    public var id: UUID
    public var status: JobStatus
    public var progress: Int
    public var message: String?
    public var createdAt: Date
    public var completedAt: Date?
    public var originalFilename: String?
    public var sourceDuration: Double?
    public var segmentsSelected: Int?
    public var hasPoster: Bool
    /// The app's own strings (`JobMetadata`).
    public var metadata: [String: String]?

    public init(
        id: UUID, status: JobStatus, progress: Int, message: String?, createdAt: Date, completedAt: Date?,
        originalFilename: String?, sourceDuration: Double?, segmentsSelected: Int?, hasPoster: Bool, metadata: [String: String]? = nil
    ) {
        self.id = id
        self.status = status
        self.progress = progress
        self.message = message
        self.createdAt = createdAt
        self.completedAt = completedAt
        self.originalFilename = originalFilename
        self.sourceDuration = sourceDuration
        self.segmentsSelected = segmentsSelected
        self.hasPoster = hasPoster
        self.metadata = metadata
    }

    /// The same columns of a whole job row.
    public init(_ job: JobRecord) {
        self.init(
            id: job.id, status: job.status, progress: job.progress, message: job.message, createdAt: job.createdAt,
            completedAt: job.completedAt, originalFilename: job.originalFilename, sourceDuration: job.sourceDuration,
            segmentsSelected: job.segmentsSelected, hasPoster: job.posterKey != nil, metadata: job.metadata)
    }
}

extension JobStore {
    /// Job `id` as a status poll with the token whose SHA-256 (hex) is `tokenSHA256` sees it; with no
    /// token (anonymous, when the API allows it), only a job without an owner is found.
    ///
    /// Polls that arrive while others are at the database wait for them and then go together, as
    /// one statement (`StatusPolls`): each is answered by a read that began after it arrived.
    public func pollStatus(job id: UUID, tokenSHA256: String?) async throws(JobStoreError) -> PolledJob {
        guard let tokenSHA256 else {
            return try await database("read the job") { connection, logger in
                for try await row in try await connection.execute(AnonymousPoll(job: id), logger: logger) {
                    return row.map(PolledJob.found) ?? .notFound
                }
                return .notFound
            }
        }
        return try await polls.poll(job: id, tokenSHA256: tokenSHA256)
    }

    /// The same read for a token, answered through `answer` instead of a suspended task: for the
    /// API's status poll served on its event loop (`StatusPollHandler`), with no task of its own.
    /// Called on an event loop, the poll goes in that loop's lane and `answer` runs on that loop.
    public func pollStatus(job id: UUID, tokenSHA256: String, answer: @escaping StatusPollAnswer) {
        polls.poll(job: id, tokenSHA256: tokenSHA256, answer: answer)
    }

    /// Answers polls, in the order given, with one statement over the store's pool (the lane for
    /// polls from outside the event loops).
    static func pollStatuses(
        _ polls: [(job: UUID, tokenSHA256: String)], client: PostgresClient,
        logger: Logger
    ) async throws(JobStoreError) -> [PolledJob] {
        try await database("read the jobs", client: client, logger: logger) { connection, logger in
            var answers = [PolledJob](repeating: .unknownToken, count: polls.count)
            let statement = DevicePolls(jobs: polls.map(\.job), tokens: polls.map(\.tokenSHA256))
            for try await (index, answer) in try await connection.execute(statement, logger: logger) where answers.indices.contains(index) {
                answers[index] = answer
            }
            return answers
        }
    }
}

/// One row per poll, by its position (from 0): none of the job's columns for a token that is not
/// known or was revoked, the job's when the token's device owns it.
struct DevicePolls: PostgresPreparedStatement {
    static let name = "moments_status_polls"
    static let sql = """
        SELECT p.n - 1, d.id IS NOT NULL, \(statusColumns)
        FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS p(job, token, n)
        LEFT JOIN devices d ON d.token_sha256 = p.token AND d.revoked_at IS NULL
        LEFT JOIN jobs j ON j.id = p.job AND j.owner = d.id::text
        """
    typealias Row = (Int, PolledJob)
    let jobs: [UUID]
    let tokens: [String]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(jobs)
        bindings.append(tokens)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try Self.decode(row) }

    static func decode(_ row: PostgresRow) throws -> Row {
        try decode(try row.decode((Int, Bool, UUID?, String?, Int?, String?, Date?, Date?, String?, Double?, Int?, Bool?, String?).self))
    }

    /// A row of `PreparedQuery.execute` (the lanes' future-based path). Its values come in binary,
    /// as every execute asks, but PostgresNIO labels them with the formats of the statement's
    /// description (text), so each cell is read as what it is.
    static func decode(binaryRow row: PostgresRow) throws -> Row {
        let cells = row.map {
            PostgresCell(
                bytes: $0.bytes, dataType: $0.dataType, format: .binary, columnName: $0.columnName,
                columnIndex: $0.columnIndex)
        }
        guard cells.count == 13 else { throw JobStoreError(.unavailable, "The status poll statement returned \(cells.count) columns, not 13.") }
        return try decode(
            (
                try cells[0].decode(Int.self), try cells[1].decode(Bool.self), try cells[2].decode(UUID?.self),
                try cells[3].decode(String?.self), try cells[4].decode(Int?.self), try cells[5].decode(String?.self),
                try cells[6].decode(Date?.self), try cells[7].decode(Date?.self), try cells[8].decode(String?.self),
                try cells[9].decode(Double?.self), try cells[10].decode(Int?.self), try cells[11].decode(Bool?.self),
                try cells[12].decode(String?.self)
            ))
    }

    private static func decode(
        _ columns: (Int, Bool, UUID?, String?, Int?, String?, Date?, Date?, String?, Double?, Int?, Bool?, String?)
    ) -> Row {
        let (index, known, id, status, progress, message, created, completed, filename, duration, segments, poster, metadata) = columns
        guard known else { return (index, .unknownToken) }
        let job = statusRow((id, status, progress, message, created, completed, filename, duration, segments, poster, metadata))
        return (index, job.map(PolledJob.found) ?? .notFound)
    }
}

/// Job `$1` if it has no owner.
struct AnonymousPoll: PostgresPreparedStatement {
    static let name = "moments_status_poll_anonymous"
    static let sql = "SELECT \(statusColumns) FROM jobs j WHERE j.id = $1 AND j.owner IS NULL"
    static var bindingDataTypes: [PostgresDataType] { [.uuid] }
    typealias Row = JobStatusRow?
    let job: UUID

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(job)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { statusRow(try row.decode(StatusColumns.self)) }
}

/// The poll's columns, from `jobs j`.
let statusColumns = """
    j.id, j.status, j.progress, j.message, j.created_at, j.completed_at, j.original_filename, j.source_duration,
    j.segments_selected, j.poster_key IS NOT NULL, j.metadata::text
    """

typealias StatusColumns = (UUID?, String?, Int?, String?, Date?, Date?, String?, Double?, Int?, Bool?, String?)

/// One row of `statusColumns`; nil when the outer join found no job.
func statusRow(_ columns: StatusColumns) -> JobStatusRow? {
    let (id, status, progress, message, created, completed, filename, duration, segments, poster, metadata) = columns
    guard let id, let status, let progress, let created else { return nil }
    return JobStatusRow(
        id: id, status: JobStatus(rawValue: status) ?? .failed, progress: progress, message: message,
        createdAt: created, completedAt: completed, originalFilename: filename, sourceDuration: duration,
        segmentsSelected: segments, hasPoster: poster ?? false, metadata: metadata.flatMap(JobStore.metadata))
}
