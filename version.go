package harvest

import (
	"encoding/json"
	"fmt"
)

// DefaultVersion is what GetVersion returns to a run that passed the
// change before the GetVersion call existed: its history has no version
// marker where the call is.
const DefaultVersion = -1

// versionMarker names the markers GetVersion records.
const versionMarker = "version"

// versionDetails are the details of a version marker.
type versionDetails struct {
	ChangeID string `json:"change_id"`
	Version  int    `json:"version"`
}

// GetVersion lets workflow code change what it issues without breaking
// runs already past the change. A new run records maxSupported in a
// marker (name "version") and gets it; a replaying run gets the version
// it recorded; a run that passed this point before the call existed (the
// next recorded command is not this change's marker) gets DefaultVersion
// and records nothing. A version outside [minSupported, maxSupported] is
// a NonDeterminismError: raise minSupported to retire an old branch once
// no open run needs it.
//
//	v := harvest.GetVersion(ctx, "fee-lookup", harvest.DefaultVersion, 1)
//	if v == harvest.DefaultVersion {
//		// the code as it was
//	} else {
//		// the new code
//	}
func GetVersion(ctx Context, changeID string, minSupported, maxSupported int) int {
	return ctx.state().getVersion(changeID, minSupported, maxSupported)
}

func (s *runState) getVersion(changeID string, lo, hi int) int {
	v, eventID := s.versionAt(changeID, hi)
	if v < lo || v > hi {
		s.nonDeterministic(eventID, fmt.Sprintf("change %q has version %d, outside the supported range [%d, %d]", changeID, v, lo, hi))
	}
	return v
}

// versionAt is the version of changeID at this point of the run, and the
// event it was read from (-1 for a new marker).
func (s *runState) versionAt(changeID string, newVersion int) (int, int64) {
	if s.cursor >= len(s.recorded) {
		s.recordVersion(changeID, newVersion)
		return newVersion, -1
	}
	ev := s.recorded[s.cursor]
	d, ok := versionOf(ev)
	if !ok || d.ChangeID != changeID {
		return DefaultVersion, ev.EventID
	}
	s.recordVersion(changeID, d.Version)
	return d.Version, ev.EventID
}

// recordVersion issues the version marker of changeID.
func (s *runState) recordVersion(changeID string, version int) {
	id := s.nextSeq()
	a := markerArgs(versionMarker, changeID)
	s.issue(EventMarkerRecorded, id, versionMarker, a, func() any {
		return MarkerRecordedData{Name: versionMarker, MarkerID: id, Digest: a.sum,
			Details: mustJSON(versionDetails{ChangeID: changeID, Version: version})}
	})
}

// versionOf decodes a recorded version marker.
func versionOf(ev Event) (versionDetails, bool) {
	if ev.Type != EventMarkerRecorded {
		return versionDetails{}, false
	}
	var m MarkerRecordedData
	if json.Unmarshal(ev.Data, &m) != nil || m.Name != versionMarker {
		return versionDetails{}, false
	}
	var d versionDetails
	if json.Unmarshal(m.Details, &d) != nil {
		return versionDetails{}, false
	}
	return d, true
}
