package sandbox

// refItem is one entry of a read-only reference list (spec 2.2).
type refItem struct {
	id          int64
	description string
}

func privacyLevels() []refItem {
	return []refItem{
		{1, "Personalizes the Subscriber's experience"},
		{2, "Personalizes the experience but does not report on the Subscriber's activity"},
		{3, "Does not personalize the experience"},
	}
}

func subscriberStatuses() []refItem {
	return []refItem{
		{1, "Unsubscribed from all Blasts and News Digests. Reserved; cannot be used directly in a request"},
		{2, "Receives e-mail Blasts only"},
		{3, "Receives News Digests only"},
		{4, "Receives e-mail Blasts and News Digests"},
	}
}

func blastStatuses() []refItem {
	return []refItem{{1, "Draft"}, {2, "Sending now"}, {3, "Scheduled"}, {4, "Sent"}}
}

// departureCodes are the 12 codes of spec 2.2. Only code 6 has a meaning in
// the spec; the others are plausible stand-ins so that clients see real
// descriptions.
func departureCodes() []refItem {
	return []refItem{
		{1, "resigned"},
		{2, "dismissed"},
		{3, "laid off"},
		{4, "end of contract"},
		{5, "transferred"},
		{6, "retired"},
		{7, "deceased"},
		{8, "leave of absence"},
		{9, "relocated"},
		{10, "duplicate record"},
		{11, "asked to be removed"},
		{12, "other"},
	}
}

// refRecords turns a reference list into records for the list machinery.
func refRecords(items []refItem) []*record {
	recs := make([]*record, len(items))
	for i, it := range items {
		recs[i] = &record{ID: it.id, Fields: map[string]any{"description": it.description}}
	}
	return recs
}
