// Fuzzes the Firebase readers: `ImportPlan.read` of the input as a Realtime Database export and as a Firestore
// export, and `ImportFormat.guess`, as `parley import` does. Reading must never trap.
//
// One property is checked as well: every event read from an export that the engine validates is written by
// export (`jsonLine()`) as a line that reads back to the same line (issue 19, defect 12: whatever import
// accepts, export must write and import must read back). A failure traps, so libFuzzer keeps the input.
import Foundation
import FuzzSupport
import Interchange
import Projections

@main enum FuzzFirebase {
    static func main() {
        runFuzzer { data, size in
            let bytes = Data(UnsafeBufferPointer(start: data, count: size))
            _ = ImportFormat.guess(bytes)
            for format in [ImportFormat.firebaseRTDB, .firestoreJSON] {
                let plan = ImportPlan.read(bytes, format: format)
                checkRoundTrip(plan.items.map(\.envelope))
            }
            return 0
        }
    }
}
