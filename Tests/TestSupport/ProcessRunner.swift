import Foundation

/// Runs external programs (curl, openssl, nginx, python) for tests and collects their output.
package enum ProcessRunner {
    package struct Output: Sendable {
        package var status: Int32
        package var stdout: String
        package var stderr: String
    }

    /// Finds `name` on PATH (and in /usr/sbin for nginx).
    package static func which(_ name: String) -> String? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/sbin:/usr/bin:/sbin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs `executable` with `arguments`, waiting at most `timeout` seconds (then it is killed).
    package static func run(
        _ executable: String, _ arguments: [String], input: Data? = nil,
        environment: [String: String]? = nil, timeout: Double = 30
    ) throws -> Output {
        let process = Process()
        process.executableURL = URL(
            fileURLWithPath: executable.hasPrefix("/") ? executable : (which(executable) ?? executable))
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let inPipe = Pipe()
        process.standardInput = inPipe
        try ChildProcess.launch(process)
        if let input { inPipe.fileHandleForWriting.write(input) }
        try? inPipe.fileHandleForWriting.close()
        let group = DispatchGroup()
        nonisolated(unsafe) var outData = Data()
        nonisolated(unsafe) var errData = Data()
        group.enter()
        DispatchQueue.global().async {
            outData = out.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let status = waitForExit(process, timeout: timeout)
        group.wait()
        return Output(
            status: status, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Waits for `process` to exit, killing it after `timeout` seconds; its exit status (the signal's number when a
    /// signal ended it, as `Process.terminationStatus` says).
    ///
    /// The child is reaped here with `waitpid` rather than left to Foundation alone: Foundation's `Process` sometimes
    /// misses a child's exit (the child stays a zombie, `isRunning` stays true and `waitUntilExit()` spins forever),
    /// which hung a whole test run.
    package static func waitForExit(_ process: Process, timeout: Double) -> Int32 {
        let pid = process.processIdentifier
        guard pid > 0 else { return process.terminationStatus }
        let deadline = Date().addingTimeInterval(timeout)
        var killed = false
        while true {
            var status: Int32 = 0
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid {
                let signal = status & 0x7f
                return signal == 0 ? (status >> 8) & 0xff : signal
            }
            if reaped < 0 && errno == ECHILD {
                // Foundation reaped it first and knows how it ended.
                process.waitUntilExit()
                return process.terminationStatus
            }
            if !killed && Date() >= deadline {
                kill(pid, SIGKILL)
                killed = true
            }
            usleep(5_000)
        }
    }

    /// Sends `signal` to `process` and waits for it to exit (killing it after `timeout` seconds); its exit status as
    /// ``waitForExit(_:timeout:)`` says.
    @discardableResult
    package static func stop(_ process: Process, signal: Int32 = SIGKILL, timeout: Double = 10) -> Int32 {
        let pid = process.processIdentifier
        guard pid > 0 else { return process.terminationStatus }
        kill(pid, signal)
        return waitForExit(process, timeout: timeout)
    }

    /// A fresh temporary directory, under this test process's own directory (``TestRunDirectory``).
    package static func temporaryDirectory(_ prefix: String = "moya-gateway-test") -> String {
        let path = "\(TestRunDirectory.path)/\(prefix)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Makes a self-signed CA and a server certificate for `names` (DNS names and IP 127.0.0.1) with the openssl CLI.
    /// Returns (caCertificate, serverCertificate, serverKey) paths.
    package static func makeCertificates(in directory: String, commonName: String = "localhost") throws -> (
        ca: String, cert: String, key: String
    ) {
        let ca = "\(directory)/ca.pem"
        let caKey = "\(directory)/ca.key"
        let cert = "\(directory)/server.pem"
        let key = "\(directory)/server.key"
        let csr = "\(directory)/server.csr"
        let ext = "\(directory)/ext.cnf"
        try "subjectAltName=DNS:\(commonName),DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
            .write(toFile: ext, atomically: true, encoding: .utf8)
        let steps: [[String]] = [
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", caKey, "-out", ca, "-days", "2", "-subj",
                "/CN=Test CA"
            ],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=\(commonName)"],
            [
                "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", cert, "-days", "2",
                "-extfile", ext
            ]
        ]
        for step in steps {
            let output = try run("openssl", step)
            guard output.status == 0 else {
                throw NSError(
                    domain: "openssl", code: Int(output.status), userInfo: [NSLocalizedDescriptionKey: output.stderr])
            }
        }
        return (ca, cert, key)
    }

    /// Makes a self-signed certificate for `localhost` valid only between the two dates (`YYYYMMDDHHMMSSZ`, e.g. an
    /// expired one) with `openssl ca`. Returns (certificate, key) paths.
    package static func makeCertificate(in directory: String, notBefore: String, notAfter: String) throws -> (
        cert: String, key: String
    ) {
        let key = "\(directory)/dated.key"
        let csr = "\(directory)/dated.csr"
        let cert = "\(directory)/dated.pem"
        let config = "\(directory)/dated-ca.cnf"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try
            "[ca]\ndefault_ca = d\n[d]\ndatabase = \(directory)/index.txt\nnew_certs_dir = \(directory)\nserial = \(directory)/serial\ndefault_md = sha256\npolicy = p\n[p]\ncommonName = supplied\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        try "".write(toFile: "\(directory)/index.txt", atomically: true, encoding: .utf8)
        try "01\n".write(toFile: "\(directory)/serial", atomically: true, encoding: .utf8)
        let steps: [[String]] = [
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=localhost"],
            [
                "ca", "-batch", "-config", config, "-selfsign", "-keyfile", key, "-in", csr, "-out", cert,
                "-startdate", notBefore, "-enddate", notAfter, "-notext"
            ]
        ]
        for step in steps {
            let output = try run("openssl", step)
            guard output.status == 0 else {
                throw NSError(
                    domain: "openssl", code: Int(output.status), userInfo: [NSLocalizedDescriptionKey: output.stderr])
            }
        }
        return (cert, key)
    }
}
