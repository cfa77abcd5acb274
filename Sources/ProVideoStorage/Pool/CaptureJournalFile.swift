import FoundationEssentials
import ProVideoSystem
import ProVideoJournal

// The journal's format is the Journal's (`CaptureJournal`); it is written as every small state
// file of the pool is, under the pool's access rules (`DurableFile`), which live up here.
extension CaptureJournal {
    func save(_ path: String, _ calls: SystemCalls, access: PoolAccess) throws {
        try DurableFile.replace(path, with: Array(try JSONEncoder().encode(self)), calls, access: access)
    }
}
