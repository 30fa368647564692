import Foundation

/// Headless Chromium driven over WebDriver (W3C) by Debian's `chromedriver`, which
/// `scripts/setup` installs: what an operator's browser does, page by page, with real HTML, CSS,
/// the console's script and its Content-Security-Policy. Requests go through plain curl.
public final class Browser: @unchecked Sendable {
    /// chromedriver's process (spawned and reaped with posix calls: Foundation's `Process.waitUntilExit` hung here).
    private let driver: pid_t
    private let endpoint: String
    private let session: String
    /// Where `screenshot(_:)` writes: `.data/screenshots` in the repository (not committed).
    public static let screenshots = TestServices.repository.appendingPathComponent(".data/screenshots")
    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    /// Starts chromedriver and one headless Chromium session, runs `body`, and ends both.
    public static func withBrowser<T>(_ body: (Browser) async throws -> T) async throws -> T {
        let browser = try await Browser()
        defer { browser.quit() }
        return try await body(browser)
    }

    private init() async throws {
        guard let driverPath = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"].first(where: FileManager.default.isExecutableFile) else {
            throw TestFailure("chromedriver is not installed: scripts/setup installs Debian's chromium and chromium-driver.")
        }
        // A random port may be taken (chromedriver then exits at once): up to three, 30 s each on a loaded machine.
        var started: (pid_t, String)?
        for _ in 0..<3 where started == nil {
            let port = Int.random(in: 30_000..<40_000)
            let pid = try TestServices.spawn(driverPath, ["--port=\(port)"])
            let endpoint = "http://127.0.0.1:\(port)"
            let up = try await TestServices.eventually(timeout: .seconds(30)) {
                (try? curl(["\(endpoint)/status"]).body.contains("\"ready\":true")) == true || waitpid(pid, nil, WNOHANG) == pid
            }
            if up, kill(pid, 0) == 0, (try? curl(["\(endpoint)/status"]).body.contains("\"ready\":true")) == true {
                started = (pid, endpoint)
            } else {
                Self.stop(pid)
            }
        }
        guard let (driver, endpoint) = started else { throw TestFailure("chromedriver did not start (three ports tried, 30 s each)") }
        self.driver = driver
        self.endpoint = endpoint
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "goog:chromeOptions": [
                        "binary": "/usr/bin/chromium",
                        "args": [
                            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1360,1100",
                            "--no-first-run", "--disable-extensions",
                        ],
                    ],
                ]
            ]
        ]
        let reply = try Self.call(endpoint, "POST", "/session", capabilities)
        guard let value = reply["value"] as? [String: Any], let session = value["sessionId"] as? String else {
            Self.stop(driver)
            throw TestFailure("no WebDriver session: \(reply)")
        }
        self.session = session
    }

    func quit() {
        _ = try? Self.call(endpoint, "DELETE", "/session/\(session)", nil)
        Self.stop(driver)
    }

    private static func stop(_ pid: pid_t) {
        kill(pid, SIGTERM)
        TestServices.wait(for: pid)
    }

    // MARK: Pages

    public func go(_ url: String) throws { try command("POST", "url", ["url": url]) }

    public var url: String { get throws { try command("GET", "url") as? String ?? "" } }

    /// The element's text as shown (CSS applied); throws when there is none. Found again if a live
    /// update replaced it between finding and reading.
    public func text(_ css: String) throws -> String {
        try againIfReplaced { try command("GET", "element/\(try element(css))/text") as? String ?? "" }
    }

    /// Whether an element matches `css` now.
    public func exists(_ css: String) throws -> Bool {
        let found = try command("POST", "elements", ["using": "css selector", "value": css]) as? [[String: Any]] ?? []
        return !found.isEmpty
    }

    public func count(_ css: String) throws -> Int {
        (try command("POST", "elements", ["using": "css selector", "value": css]) as? [[String: Any]] ?? []).count
    }

    /// Clicks the element; found again if a live update replaced it between finding and clicking.
    public func click(_ css: String) throws {
        try againIfReplaced { try command("POST", "element/\(try element(css))/click", [String: Any]()) }
    }

    /// Runs `body` (which finds an element and acts on it) again, up to three times in all, when the
    /// page's live updates replaced the element in between ("stale element reference").
    private func againIfReplaced<T>(_ body: () throws -> T) throws -> T {
        var attempt = 1
        while true {
            do {
                return try body()
            } catch let failure as TestFailure where failure.description.contains("stale element") && attempt < 3 {
                attempt += 1
            }
        }
    }

    /// Clears the field and types `text` into it.
    public func type(_ css: String, _ text: String) throws {
        let id = try element(css)
        try command("POST", "element/\(id)/clear", [String: Any]())
        try command("POST", "element/\(id)/value", ["text": text])
    }

    /// Chooses the option of a `<select>` whose value is `value`.
    public func select(_ css: String, value: String) throws { try click("\(css) option[value=\"\(value)\"]") }

    /// Runs `script` in the page (`arguments` are JSON values) and answers its result.
    @discardableResult
    public func execute(_ script: String, _ arguments: [Any] = []) throws -> Any? {
        try command("POST", "execute/sync", ["script": script, "args": arguments])
    }

    /// Writes a PNG of the window to `.data/screenshots/<name>.png` and answers where.
    @discardableResult
    public func screenshot(_ name: String) throws -> URL {
        guard let base64 = try command("GET", "screenshot") as? String, let data = Data(base64Encoded: base64) else {
            throw TestFailure("no screenshot")
        }
        try FileManager.default.createDirectory(at: Self.screenshots, withIntermediateDirectories: true)
        let file = Self.screenshots.appendingPathComponent("\(name).png")
        try data.write(to: file)
        return file
    }

    /// Waits until `condition` holds (polling every 100 ms), for up to `timeout`.
    public func wait(_ what: String, timeout: Duration = .seconds(20), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if (try? await condition()) == true { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("waited \(timeout) for \(what); the page is at \((try? url) ?? "?")")
    }

    // MARK: WebDriver

    private func element(_ css: String) throws -> String {
        let value = try command("POST", "element", ["using": "css selector", "value": css])
        guard let found = value as? [String: Any], let id = found[Self.elementKey] as? String else {
            throw TestFailure("no element matches \(css) on \((try? url) ?? "?")")
        }
        return id
    }

    @discardableResult
    private func command(_ method: String, _ path: String, _ body: Any? = nil) throws -> Any? {
        let reply = try Self.call(endpoint, method, "/session/\(session)/\(path)", body)
        if let value = reply["value"] as? [String: Any], let error = value["error"] as? String {
            throw TestFailure("WebDriver \(method) \(path): \(error): \(value["message"] as? String ?? "")")
        }
        return reply["value"]
    }

    private static func call(_ endpoint: String, _ method: String, _ path: String, _ body: Any?) throws -> [String: Any] {
        var arguments = ["--max-time", "120", "-X", method, "\(endpoint)\(path)"]
        if let body {
            let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
            arguments += ["-H", "Content-Type: application/json", "--data-binary", json]
        }
        let reply = try curl(arguments)
        guard let object = try? JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any] else {
            throw TestFailure("WebDriver \(method) \(path) answered \(reply.status): \(reply.body.prefix(300))")
        }
        return object
    }
}
