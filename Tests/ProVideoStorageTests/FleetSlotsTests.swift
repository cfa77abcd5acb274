import Foundation
import TestSupport
import Testing
@testable import ProVideoStorage

/// The fleet's slots (`FleetSlots`): one OFD lock per slot, each holder's share of the rate.
@Suite struct FleetSlotsTests {
    @Test func slotsAreTakenOnceAndFreedWithTheirHolder() throws {
        try TestSupport.withScratch { scratch in
            let fleet = try FleetSlots(file: scratch + "/fleet", slots: 2, rate: 100_000_000)
            #expect(try fleet.holders() == 0)
            var first = try fleet.tryAcquire()
            let second = try fleet.tryAcquire()
            #expect(first != nil && second != nil && first?.index != second?.index)
            #expect(try fleet.tryAcquire() == nil, "a third transfer took a slot of two")
            #expect(try fleet.holders() == 2)
            #expect(fleet.share() == 50_000_000)
            first = nil
            #expect(try fleet.holders() == 1)
            let third = try fleet.tryAcquire()
            #expect(third != nil && third?.index != second?.index)
        }
    }

    /// A share is probed at most once a second: until then, the last one stands.
    @Test func theShareIsTheRateOverTheHolders() throws {
        try TestSupport.withScratch { scratch in
            let fleet = try FleetSlots(file: scratch + "/fleet", slots: 4, rate: 90)
            let held = try fleet.tryAcquire()
            #expect(held != nil)
            #expect(fleet.share() == 90)
            let more = [try fleet.tryAcquire(), try fleet.tryAcquire()]
            #expect(more.allSatisfy { $0 != nil })
            #expect(fleet.share() == 90, "probed again within a second")
            #expect(try FleetSlots(file: scratch + "/fleet", slots: 4, rate: 90).share() == 30)
            #expect(try FleetSlots(file: scratch + "/fleet", slots: 4, rate: nil).share() == nil)
        }
    }

    @Test func badBudgetsAreRefused() {
        TestSupport.withScratch { scratch in
            for (slots, rate) in [(0, Int64?.none), (FleetSlots.maximumSlots + 1, nil), (1, 0)] {
                #expect(throws: ProVideoError.self) { try FleetSlots(file: scratch + "/fleet", slots: slots, rate: rate) }
            }
            let error = #expect(throws: ProVideoError.self) {
                try FleetSlots(file: scratch + "/missing/fleet", slots: 1, rate: nil)
            }
            #expect(error?.errno == ENOENT)
        }
    }
}
