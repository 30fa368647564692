import Dispatch
import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import Logging
import Metrics
import MomentsContract
import NIOCore
import NIOHTTPTypes

/// The status poll (`GET /api/v1/jobs/{id}/status`, most of the API's traffic) answered in the
/// connection's channel pipeline, on its event loop, with no Swift task per request: the request's
/// head goes to the poll's lane (`JobStore.pollStatus(job:tokenSHA256:answer:)`) and the answer is
/// written when the statement returns. Through Hummingbird, each poll crossed its connection's
/// task, the router's middleware chain and two continuations, a fifth of the node's CPU time
/// (scripts/bench-api, BENCH_PROFILE=1).
///
/// The route's answers stay the router's: the same status, headers (`Date`, `Server`) and bytes,
/// the same errors, the same request metrics. Only the poll as apps send it comes here: `GET`, the
/// exact path, no query, `Authorization: Bearer <token>` in its usual form, no body, no
/// `Connection` header. Everything else (no token, another spelling, `HEAD`, …) goes on to
/// Hummingbird and its `addStatusRoute` route, as does every request while one of Hummingbird's
/// is unanswered on the connection, so that answers keep the order of their requests. With
/// tracing on, the router serves every poll (each gets its span); see `buildApplication`.
struct StatusPollRoute: Sendable {
    let store: JobStore
    let configuration: APIConfiguration
    let serverName: String
    let logger: Logger
    let metrics = RequestMetricsCache()
    /// The route's name in the request metrics, as Hummingbird's router names it.
    static let path = "/api/v1/jobs/{id}/status"

    func handler() -> StatusPollHandler { StatusPollHandler(route: self) }

    /// The job id of a poll this handler answers, or nil for a request that goes to the router.
    static func job(of request: HTTPRequest) -> UUID? {
        guard request.method == .get, var path = request.path, path.utf8.count == 56 else { return nil }
        let id: UUID? = path.withUTF8 { bytes in
            guard prefix.elementsEqual(bytes[0..<13]), suffix.elementsEqual(bytes[49..<56]) else { return nil }
            return UUID(uuidString: String(decoding: UnsafeBufferPointer(rebasing: bytes[13..<49]), as: UTF8.self))
        }
        guard let id else { return nil }
        let fields = request.headerFields
        guard fields[.connection] == nil, fields[.contentLength] == nil, fields[.transferEncoding] == nil else { return nil }
        return id
    }

    private static let prefix = Array("/api/v1/jobs/".utf8)
    private static let suffix = Array("/status".utf8)

    /// The SHA-256 of the poll's bearer token when it is written as apps write it, else nil.
    static func token(of request: HTTPRequest) -> String? {
        request.headerFields[.authorization].flatMap(DeviceToken.canonicalToken).map(DeviceToken.sha256)
    }

    /// The answer to `polled`: the route's status, own headers (`X-Request-Id` among them, where
    /// the router's middleware puts it) and body.
    func answer(_ polled: Result<PolledJob, JobStoreError>, request: HTTPRequest) -> (HTTPResponse.Status, HTTPFields, ByteBuffer) {
        let id = RequestIdentifier.sent(in: request.headerFields) ?? RequestIdentifier.make()
        let error: APIError
        switch polled {
        case .success(let polled):
            do throws(APIError) {
                var (headers, body) = StatusJSON.parts(try JobsController.report(polled, request: request, configuration: configuration))
                headers.append(HTTPField(name: RequestIdentifier.header, value: id))
                return (.ok, headers, body)
            } catch let refusal {
                error = refusal
            }
        case .failure(let failure):
            logger.error("request failed", metadata: ["error": "\(failure)", "path": "\(request.path ?? "")", "hb.request.id": "\(id)"])
            error = ErrorMiddleware<MomentsRequestContext>.map(failure)
        }
        guard case (var headers, let body)? = try? error.parts(requestID: id) else {
            return (.internalServerError, [.contentLength: "0", RequestIdentifier.header: id], ByteBuffer())
        }
        headers[.contentLength] = String(body.readableBytes)
        headers.append(HTTPField(name: RequestIdentifier.header, value: id))
        return (error.status, headers, body)
    }
}

/// One connection's status polls; `StatusPollRoute` says which requests it answers. It sits after
/// the HTTP/1 codec and before Hummingbird's connection handlers.
///
/// It keeps to the client's pace: while the connection cannot take more output (the client is not
/// reading), it reads no more requests and answers none of those it holds, so what the node keeps
/// for a client that never reads is one read's requests and the socket's buffer. A client with
/// more than `mostHeld` requests parts waiting (pipelined far past what any client needs) is
/// disconnected.
final class StatusPollHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let route: StatusPollRoute
    /// Requests passed to Hummingbird whose answer has not ended yet.
    private var routed = 0
    /// The head of the request being read: a poll of ours (with its job and token), or one for the router.
    private enum Reading {
        case idle
        case poll(HTTPRequest, job: UUID, token: String)
        case routed
    }
    private var reading = Reading.idle
    /// A poll at the database: what arrives meanwhile waits here, in order, and so do a read,
    /// events (the client's end of input, graceful shutdown's quiesce) and errors (a request that
    /// does not parse), which would otherwise end the connection before the poll's answer is written.
    private var answering = false
    private var held = CircularBuffer<HTTPRequestPart>()
    private var heldRead = false
    /// Request parts held at most (two a poll, a few hundred bytes each): more than one read of
    /// pipelined polls may bring, so only a client far past any real one meets it (it is disconnected).
    static let mostHeld = 256
    /// Whether what arrives now must wait behind a poll at the database, or behind requests held
    /// while the client was not reading its answers.
    private var waiting: Bool { answering || !held.isEmpty }
    private enum Signal {
        case event(Any)
        case error(any Error)
    }
    private var heldSignals: [Signal] = []
    private var date = HTTPDate()

    init(route: StatusPollRoute) { self.route = route }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if waiting {
            guard held.count < Self.mostHeld else {
                held.removeAll()
                context.close(promise: nil)
                return
            }
            held.append(part)
            return
        }
        // The router's parts go on now; the socket's read-complete event follows them.
        _ = read(part, context: context)
    }

    /// Takes one part; true when it went on to the router (then the router needs a read-complete
    /// event to see it).
    private func read(_ part: HTTPRequestPart, context: ChannelHandlerContext) -> Bool {
        switch (reading, part) {
        case (.idle, .head(let request)):
            if routed == 0, let job = StatusPollRoute.job(of: request), let token = StatusPollRoute.token(of: request) {
                reading = .poll(request, job: job, token: token)
                return false
            }
            reading = .routed
            routed += 1
            context.fireChannelRead(wrapInboundOut(part))
            return true
        case (.poll(let request, let job, let token), .end):
            reading = .idle
            ask(request, job: job, token: token, context: context)
            return false
        case (.poll(let request, _, _), _):
            // A body after all (the codec saw no length, so this does not happen): the router's.
            reading = .routed
            routed += 1
            context.fireChannelRead(wrapInboundOut(.head(request)))
            context.fireChannelRead(wrapInboundOut(part))
            return true
        case (.routed, .end):
            reading = .idle
            context.fireChannelRead(wrapInboundOut(part))
            return true
        default:
            // The router's request's body, or a part out of place, which the router refuses.
            context.fireChannelRead(wrapInboundOut(part))
            return true
        }
    }

    private func ask(_ request: HTTPRequest, job: UUID, token: String, context: ChannelHandlerContext) {
        answering = true
        let start = DispatchTime.now().uptimeNanoseconds
        let active = route.metrics.active(.get)
        active.increment()
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        route.store.pollStatus(job: job, tokenSHA256: token) { polled in
            if loop.inEventLoop {
                let (handler, context) = bound.value
                handler.answer(polled, request: request, start: start, active: active, context: context)
            } else {
                loop.execute {
                    let (handler, context) = bound.value
                    handler.answer(polled, request: request, start: start, active: active, context: context)
                }
            }
        }
    }

    private func answer(
        _ polled: Result<PolledJob, JobStoreError>, request: HTTPRequest, start: UInt64, active: Meter,
        context: ChannelHandlerContext
    ) {
        let (status, ownHeaders, body) = route.answer(polled, request: request)
        var headers = ownHeaders
        headers.append(HTTPField(name: .date, value: date.now()))
        headers.append(HTTPField(name: .server, value: route.serverName))
        let metrics = route.metrics.endpoint(StatusPollRoute.path, .get, status)
        metrics.requests.increment()
        if status == .ok {
            metrics.duration.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - start)
        } else {
            metrics.errors.increment()
        }
        active.decrement()
        context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        answering = false
        resume(context: context)
    }

    /// Goes on with what arrived meanwhile, in order, until a poll waits again or the client stops
    /// taking answers; then with the events and the read held behind it.
    private func resume(context: ChannelHandlerContext) {
        var routedAny = false
        while !answering, context.channel.isWritable, let part = held.popFirst() {
            routedAny = read(part, context: context) || routedAny
        }
        if routedAny { context.fireChannelReadComplete() }
        guard !waiting else { return }
        let signals = heldSignals
        heldSignals.removeAll()
        for signal in signals {
            switch signal {
            case .event(let event): context.fireUserInboundEventTriggered(event)
            case .error(let error): context.fireErrorCaught(error)
            }
        }
        if heldRead, context.channel.isWritable {
            heldRead = false
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, !answering { resume(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { routed = max(0, routed - 1) }
        context.write(data, promise: promise)
    }

    func read(context: ChannelHandlerContext) {
        if waiting || !context.channel.isWritable {
            heldRead = true
        } else {
            context.read()
        }
    }

    /// Hummingbird ends a connection when its input ends, and graceful shutdown closes it once the
    /// requests Hummingbird knows of are answered: while a poll is at the database, both wait.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if waiting {
            heldSignals.append(.event(event))
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if waiting {
            heldSignals.append(.error(error))
        } else {
            context.fireErrorCaught(error)
        }
    }
}

/// The `Date` header (RFC 9110's IMF-fixdate, as Hummingbird writes it), made again only when the
/// second changes.
struct HTTPDate {
    private var second = Int.min
    private var text = ""

    mutating func now() -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        let now = Int(time.tv_sec)
        if now != second {
            second = now
            text = Self.format(now)
        }
        return text
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for seconds since 1970.
    static func format(_ seconds: Int) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let time = seconds - days * 86_400
        let (year, month, day) = StatusJSON.civil(fromDays: Int64(days))
        let weekday = ((days % 7) + 7 + 4) % 7  // 1970-01-01 was a Thursday
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekdays[weekday]), \(two(day)) \(months[month - 1]) \(year) \(two(time / 3600)):\(two(time / 60 % 60)):\(two(time % 60)) GMT"
    }

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
}
