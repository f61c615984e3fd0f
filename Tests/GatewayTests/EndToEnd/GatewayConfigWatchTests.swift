import Foundation
import HTTPClientCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `serve --watch` and `reload.watch` through the real `moya-gateway` binary: a Kubernetes ConfigMap volume's
/// `..data` symlink swap reloads the routes once per burst of changes, an invalid swap is rejected with the running
/// routes kept, unrelated files beside the configuration change nothing, and a Secret volume's swap of a secret file
/// (`${file:...}`) or a stub body edited in place take effect by themselves.
@Suite(.serialized) struct GatewayConfigWatchTests {
    /// A directory laid out as the kubelet lays out a ConfigMap or Secret volume: each version in a timestamped
    /// directory, `..data` a symlink to the current one, every key a symlink through `..data`.
    struct Volume {
        let path: String
        private(set) var version = 0

        /// Makes the volume with `files` (name → contents) as its first version.
        init(at path: String, files: [String: String]) throws {
            self.path = path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try update(files)
            for name in files.keys {
                guard symlink("..data/\(name)", "\(path)/\(name)") == 0 else {
                    throw GatewayTestError("symlink: \(errno)")
                }
            }
        }

        /// A new version, swapped in as the kubelet's atomic writer does: write it, point `..data_tmp` at it, rename
        /// that over `..data`, remove the old version.
        mutating func update(_ files: [String: String]) throws {
            version += 1
            let name = "..2024_01_01_00_00_0\(version).000000001"
            try FileManager.default.createDirectory(atPath: "\(path)/\(name)", withIntermediateDirectories: true)
            for (file, contents) in files {
                try contents.write(toFile: "\(path)/\(name)/\(file)", atomically: false, encoding: .utf8)
            }
            unlink("\(path)/..data_tmp")
            guard symlink(name, "\(path)/..data_tmp") == 0, rename("\(path)/..data_tmp", "\(path)/..data") == 0 else {
                throw GatewayTestError("swap failed: \(errno)")
            }
            if version > 1 {
                try? FileManager.default.removeItem(atPath: "\(path)/..2024_01_01_00_00_0\(version - 1).000000001")
            }
        }
    }

    static func routes(_ paths: [String], reload: String = "reload: { debounce: 500ms }") -> String {
        """
        \(GatewayProcess.listeners)
        \(reload)
        upstreams:
          stubbed: { stub: { status: 200, body: "ok" } }
        routes:
        \(paths.map { "  - { name: r\($0.dropFirst()), match: { path: \($0) }, upstream: stubbed }" }.joined(separator: "\n"))
        """
    }

    static func reloads(_ gateway: GatewayProcess) -> Int { gateway.stdout.occurrences(of: "\"msg\":\"reloaded\"") }

    static func status(_ gateway: GatewayProcess, _ path: String) async throws -> Int {
        try await HTTPClient().execute(HTTPClientRequest(url: "\(gateway.url)\(path)")).status
    }

    /// Waits up to 5 s for `condition`.
    static func waitFor(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<250 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    @Test func aConfigMapSwapReloadsTheRoutesOncePerBurst() async throws {
        nonisolated(unsafe) var volume: Volume?
        let gateway = try await GatewayProcess(config: "", arguments: ["--watch"], configFile: "config/gateway.yaml") {
            directory, render in
            volume = try Volume(at: "\(directory)/config", files: ["gateway.yaml": render(Self.routes(["/one"]))])
        }
        guard var volume else { throw GatewayTestError("no volume") }
        let render = { GatewayProcess.render($0, port: gateway.port, admin: gateway.adminPort) }
        // The watcher says so from its own thread, which may come after the listeners answer on a loaded machine.
        #expect(try await Self.waitFor { gateway.stdout.contains("watching the configuration files") })
        #expect(try await Self.status(gateway, "/one") == 200)
        #expect(try await Self.status(gateway, "/two") == 404)

        // A burst: two swaps 100 ms apart (within the debounce) make one reload, to the last version.
        try volume.update(["gateway.yaml": render(Self.routes(["/one", "/two"]))])
        try await Task.sleep(for: .milliseconds(100))
        try volume.update(["gateway.yaml": render(Self.routes(["/two"]))])
        #expect(try await Self.waitFor { Self.reloads(gateway) == 1 }, "\(gateway.stdout)")
        try await Task.sleep(for: .milliseconds(1000))
        #expect(Self.reloads(gateway) == 1, "one reload for the burst")
        #expect(try await Self.status(gateway, "/two") == 200)
        #expect(try await Self.status(gateway, "/one") == 404)

        // Files beside the configuration that it does not name change nothing.
        try "scratch".write(toFile: "\(volume.path)/notes.txt", atomically: false, encoding: .utf8)
        try await Task.sleep(for: .milliseconds(1000))
        #expect(Self.reloads(gateway) == 1)

        // An invalid version is rejected, and the running routes stay.
        try volume.update(["gateway.yaml": "routes: [oops"])
        #expect(try await Self.waitFor { gateway.stdout.contains("reload rejected") })
        #expect(try await Self.status(gateway, "/two") == 200)
        #expect(Self.reloads(gateway) == 1)
        #expect(gateway.stop() == 0)
    }

    /// RL-08: SIGHUP and the file watch asking at once. Reloads run one at a time, in the order they were asked for:
    /// after rewrites each followed at once by SIGHUP (the watch asking too, after its debounce), the gateway serves
    /// the last file, and no reload was rejected or took an older file after a newer one.
    @Test func aSignalAndTheWatchAtOnceEndOnTheLastFile() async throws {
        let reload = "reload: { watch: true, debounce: 50ms }"
        let gateway = try await GatewayProcess(config: Self.routes(["/v0"], reload: reload))
        #expect(try await Self.waitFor { gateway.stdout.contains("watching the configuration files") })
        for version in 1...5 {
            try gateway.rewriteConfig(Self.routes(["/v\(version)"], reload: reload))
            gateway.signal(SIGHUP)
            try await Task.sleep(for: .milliseconds(30))
        }
        #expect(try await Self.waitFor { Self.reloads(gateway) >= 2 }, "\(gateway.stdout)")
        // Until the reloads stop (the watch's may come after the signals'), bounded.
        var seen = -1
        for _ in 0..<20 where Self.reloads(gateway) != seen {
            seen = Self.reloads(gateway)
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(!gateway.stdout.contains("reload rejected"), "\(gateway.stdout)")
        #expect(try await Self.status(gateway, "/v5") == 200)
        for version in 0..<5 { #expect(try await Self.status(gateway, "/v\(version)") == 404) }
        #expect(gateway.stop() == 0)
    }

    @Test func aSecretVolumeSwapAndAnEditedStubBodyTakeEffectByThemselves() async throws {
        let upstream = try await RecordingUpstream.start()
        nonisolated(unsafe) var secrets: Volume?
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                reload: { watch: true, debounce: 200ms }
                upstreams:
                  echo:
                    base_url: http://127.0.0.1:\(upstream.port)
                    access_token: { type: bearer, token: "${file:secrets/token}" }
                  stubbed: { stub: { status: 200, body_file: stubs/body.txt } }
                routes:
                  - { name: echo, match: { path_prefix: /echo }, upstream: echo }
                  - { name: stubbed, match: { path: /stub }, upstream: stubbed }
                """, files: ["stubs/body.txt": "first body"]
        ) { directory, _ in
            secrets = try Volume(at: "\(directory)/secrets", files: ["token": "TOKEN-ONE"])
        }
        guard var secrets else { throw GatewayTestError("no volume") }
        let client = HTTPClient()
        func echoed() async throws -> String {
            String(
                decoding: try await client.execute(HTTPClientRequest(url: "\(gateway.url)/echo/x")).body, as: UTF8.self)
        }
        func stub() async throws -> String {
            String(
                decoding: try await client.execute(HTTPClientRequest(url: "\(gateway.url)/stub")).body, as: UTF8.self)
        }
        #expect(try await echoed().contains("Authorization: Bearer TOKEN-ONE"))
        #expect(try await stub() == "first body")

        try secrets.update(["token": "TOKEN-TWO"])
        #expect(try await Self.waitFor { Self.reloads(gateway) == 1 }, "\(gateway.stdout)")
        #expect(try await echoed().contains("Authorization: Bearer TOKEN-TWO"))

        // A file rewritten in place (`echo > file`: closed after writing).
        let handle = try #require(FileHandle(forWritingAtPath: "\(gateway.directory)/stubs/body.txt"))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data("second body".utf8))
        try handle.close()
        #expect(try await Self.waitFor { Self.reloads(gateway) == 2 }, "\(gateway.stdout)")
        #expect(try await stub() == "second body")
        #expect(gateway.stop() == 0)
        #expect(!gateway.stdout.contains("TOKEN-"), "the secret's value is never logged")
    }
}
