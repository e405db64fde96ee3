"""The Create/Edit form: validates before saving, errors beside their field, and an edit
conflict merged in place: what the other side changed, field by field, the reviewer's text kept.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, Select, Static, TextArea

from ...errors import StoreError
from ...model import (
    AUDIENCE_BY_SCOPE,
    MAX_CONTENT_BYTES,
    MAX_SOURCE_REFS,
    MAX_TAG_BYTES,
    MAX_TAGS,
    MAX_TITLE_BYTES,
    Record,
    RecordType,
    Scope,
)
from ...present import EditedText, visible
from ...sources import Citation
from ..widgets.ordered_keys import OrderedInput, OrderedTextArea
from .conflict import diff_text
from .modal import Modal, ResultType

# The fields an edit writes, in the form's order, and how each is named to the reviewer.
FIELDS = {"type": "Type", "title": "Title", "content": "Content", "tags": "Tags"}
# The fields typed in a text box.
TEXT_FIELDS = ("title", "content", "tags")


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True, slots=True)
class FormResult:
    """What the form hands to the saver. ``base_revision`` is None for a new record."""

    record_type: RecordType
    title: str
    content: str
    tags: list[str]
    scope: Scope
    record_id: str | None
    base_revision: int | None
    # PATH[:START-END] each; None: an edit that leaves the record's citations as they are.
    citations: list[str] | None = None


class RevisionConflict(StoreError):
    """REVISION_CONFLICT with the record's newer version, read under the same store lock turn
    as the refused edit (the saver raises it; the form merges against ``newer``)."""

    def __init__(self, error: StoreError, newer: Record) -> None:
        super().__init__(error.code, error.message)
        self.newer = newer


# save(result, saved, failed, queued): start the write; ``queued()`` runs once it waits its
# turn (after the shared confirmation), ``saved(id)`` when it is written, ``failed(error)``
# (True: the form showed it) when it is refused. All on the event loop.
Saver = Callable[
    [FormResult, Callable[[str], None], Callable[[StoreError], bool], Callable[[], None]], None
]


class UnsavedChanges:
    """Escape twice to throw a form's changes away, as editors ask before they close a changed
    buffer: the first escape (or Cancel) on a form whose values are not those it opened with
    only says so; the next one discards. An edit in between asks again. Textual-free: a form
    gives the function that reads its values and calls ``opened`` once they are shown.
    """

    def __init__(self, read: Callable[[], object]) -> None:
        self._read = read
        self._at_open: object = None
        self.asked = False  # the reviewer was told; the next escape discards

    def opened(self) -> None:
        self._at_open = self._read()

    def may_close(self) -> bool:
        """True when nothing would be lost or the reviewer was told already; otherwise it
        remembers that it told them (``asked``) and answers False."""
        if self.asked or self._read() == self._at_open:
            return True
        self.asked = True
        return False

    def edited(self) -> bool:
        """The form changed: the next escape asks again. True if it had asked."""
        was, self.asked = self.asked, False
        return was


# What a form says after a first escape on its changes.
UNSAVED_NOTE = "Unsaved changes: esc again (or Discard) throws them away; ctrl+s saves them."


class FormScreen(Modal[ResultType]):
    """A modal form that asks before what was typed in it is thrown away (``UnsavedChanges``,
    given by the form as ``unsaved``): escape, or its ``#cancel`` button, closes an untouched
    form; on a changed one it puts ``UNSAVED_NOTE`` in the ``NOTE`` box, the button becomes
    Discard and escape's key Discard, and the next one closes. The form calls ``edited`` on
    each change of a value."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("escape", "discard", "Discard"),  # once a first escape said what is unsaved
    ]
    NOTE = "#form-error"  # the Static the note goes in (the form's error line)
    unsaved: UnsavedChanges

    def action_cancel(self) -> None:
        if self.unsaved.may_close():
            self.dismiss(None)
        else:
            self._asked_to_discard(True)

    def action_discard(self) -> None:
        self.dismiss(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # escape is Cancel until a first one said what is unsaved, then Discard.
        if action in ("cancel", "discard"):
            return self.unsaved.asked is (action == "discard")
        return True

    def edited(self) -> None:
        if self.unsaved.edited():
            self._asked_to_discard(False)

    def say(self, text: str) -> None:
        """``text`` in the form's ``NOTE`` line (its errors); empty: the line is hidden."""
        box = self.query_one(self.NOTE, Static)
        box.update(text)
        box.set_class(not text, "hidden")

    def _asked_to_discard(self, asked: bool) -> None:
        if asked or str(self.query_one(self.NOTE, Static).content) == UNSAVED_NOTE:
            self.say(UNSAVED_NOTE if asked else "")  # another error stays
        self.query_one("#cancel", Button).label = "Discard" if asked else "Cancel"
        self.refresh_bindings()


def parse_tags(text: str) -> list[str]:
    return list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))


def parse_citations(text: str) -> list[str]:
    """The citations field: ``PATH[:START-END]`` separated by commas or spaces."""
    return list(dict.fromkeys(c for c in text.replace(",", " ").split() if c))


def citations_text(record: Record | None) -> str:
    """A record's citations as the form shows them (its ``file`` refs' ids)."""
    if record is None:
        return ""
    return ", ".join(str(r.id) for r in record.governance.sourceRefs if r.kind == "file")


def field_texts(record: Record) -> dict[str, str]:
    """A record's editable fields as the form shows them."""
    return {
        "type": record.type.value,
        "title": record.title,
        "content": record.content,
        "tags": ", ".join(record.tags),
    }


def _same(name: str, a: str, b: str) -> bool:
    return parse_tags(a) == parse_tags(b) if name == "tags" else a == b


def field_diff(name: str, before: str, after: str) -> Text:
    """What changed in one field: ``-`` the version both sides started from, ``+`` theirs."""
    if name == "tags":
        old, new = parse_tags(before), parse_tags(after)
        out = Text()
        for tag in old:
            if tag not in new:
                out.append(f"- {visible(tag)}\n", style="red")
        for tag in new:
            if tag not in old:
                out.append(f"+ {visible(tag)}\n", style="green")
        out.rstrip()
        return out
    return diff_text(before, after)


class RecordForm(FormScreen[str | None]):
    """New (``record`` None) or Edit. ``save(result, saved, failed)`` starts the write (see
    ``Saver``). After a REVISION_CONFLICT the form shows each field the other side changed, with
    its diff, and per field "keep mine" or "take theirs"; Save then writes over their revision.
    """

    DEFAULT_CSS = """
    RecordForm #merge { height: auto; border: round $warning; padding: 0 1; margin-bottom: 1; }
    RecordForm .merge-row { height: auto; }
    RecordForm .merge-head { height: auto; }
    RecordForm .merge-head .merge-label { width: 1fr; padding: 1 1 0 0; }
    RecordForm .merge-head Button { margin-left: 1; }
    RecordForm .merge-diff { height: auto; max-height: 12; overflow-y: auto; }
    """

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("ctrl+y", "cite_symbols", "Cite symbols", priority=True),
    ]
    AUTO_FOCUS = "#title"

    def __init__(
        self,
        *,
        record: Record | None,
        scopes: Sequence[Scope],
        default_scope: Scope,
        save: Saver,
        symbol_for: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__(classes="dialog")
        # PATH:START-END -> PATH#SYMBOL when the lines lie inside one function or class.
        self.symbol_for = symbol_for
        self.record = record
        self.scopes = list(scopes)
        self.default_scope = default_scope
        self.saver = save
        self.base_revision = record.governance.revision if record else None
        # After a conflict: per field the other side changed, "mine" or "theirs", and the
        # values to switch between.
        self.choices: dict[str, str] = {}
        self._mine: dict[str, str] = {}
        self._theirs: dict[str, str] = {}
        # Each text box's value as stored and as it was shown (stand-ins for what a reader
        # cannot see or a text area would rewrite): an untouched field saves its exact text.
        texts = field_texts(record) if record else {"title": "", "content": "", "tags": ""}
        self._texts = {name: self._edited(name, texts[name]) for name in TEXT_FIELDS}
        self._saving = False  # a save is queued or running: ctrl+s again waits for it
        self.unsaved = UnsavedChanges(self._all_values)

    @staticmethod
    def _edited(name: str, text: str) -> EditedText:
        return EditedText(text, multiline=name == "content")

    def compose(self) -> ComposeResult:
        r = self.record
        heading = (
            f"Edit {visible(r.id)} (revision {r.governance.revision})" if r else "New memory record"
        )
        shown = {name: text.shown for name, text in self._texts.items()}
        with Vertical(classes="dialog-box form-box"):
            yield Label(heading, classes="dialog-title", id="form-heading", markup=False)
            yield Static("", id="form-error", classes="form-error hidden", markup=False)
            with VerticalScroll(classes="form-fields"):
                with Vertical(id="merge", classes="hidden"):
                    yield Static("", id="merge-note", markup=False)
                if r is None:
                    yield Label("Scope", classes="field-label")
                    yield Select(
                        [(f"{s.value} ({AUDIENCE_BY_SCOPE[s]})", s) for s in self.scopes],
                        value=self.default_scope,
                        allow_blank=False,
                        id="scope",
                    )
                yield Label("Type", classes="field-label")
                yield Select(
                    [(t.value, t) for t in RecordType],
                    value=r.type if r else RecordType.FACT,
                    allow_blank=False,
                    id="type",
                )
                yield Label("Title", classes="field-label")
                # The cursor at the end, nothing selected: a first key typed adds to the title
                # instead of replacing it (so in every box of the form).
                yield OrderedInput(
                    shown["title"], id="title", placeholder="one line", select_on_focus=False
                )
                yield Static("", id="title-error", classes="field-error", markup=False)
                yield Label("Content (Markdown)", classes="field-label")
                yield OrderedTextArea(shown["content"], id="content", soft_wrap=True)
                yield Static("", id="content-error", classes="field-error", markup=False)
                yield Label("Tags (comma-separated)", classes="field-label")
                yield OrderedInput(shown["tags"], id="tags", select_on_focus=False)
                yield Static("", id="tags-error", classes="field-error", markup=False)
                yield Label(
                    "Citations (the code it rests on: PATH, PATH:START-END or PATH#SYMBOL; "
                    "ctrl+y: lines inside one function or class cite it instead)",
                    classes="field-label",
                )
                yield OrderedInput(
                    citations_text(r),
                    id="citations",
                    placeholder="src/app.py:10-24, README.md",
                    select_on_focus=False,
                )
                yield Static("", id="citations-error", classes="field-error", markup=False)
                yield Static("", id="citations-note", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save (ctrl+s)", id="save", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.unsaved.opened()

    # ------------------------------------------------------------------ validation

    def _text(self, name: str) -> str:
        """The text of box ``name`` as it would be stored (see ``EditedText.read``)."""
        box = self.query_one(f"#{name}")
        edited = box.text if isinstance(box, TextArea) else box.value  # type: ignore[attr-defined]
        return self._texts[name].read(edited)

    def _errors(self) -> dict[str, str]:
        title = self._text("title").strip()
        content = self._text("content")
        tags = self._text("tags")
        errors: dict[str, str] = {}
        # The host's limits (its validateRecord); the store checks everything again.
        if not title:
            errors["title"] = "A title is required."
        elif "\n" in title or _bytes(title) > MAX_TITLE_BYTES:
            errors["title"] = f"Keep the title to one line of at most {MAX_TITLE_BYTES} bytes."
        if not content.strip():
            errors["content"] = "Content is required."
        elif _bytes(content) > MAX_CONTENT_BYTES:
            errors["content"] = f"Content is at most {MAX_CONTENT_BYTES // 1024} KiB."
        tag_list = parse_tags(tags)
        if len(tag_list) > MAX_TAGS:
            errors["tags"] = f"At most {MAX_TAGS} tags."
        elif any(_bytes(t) > MAX_TAG_BYTES for t in tag_list):
            errors["tags"] = f"A tag is at most {MAX_TAG_BYTES} bytes."
        # The form checks the form of each citation; the save reads the files.
        cites = parse_citations(self.query_one("#citations", Input).value)
        if len(cites) > MAX_SOURCE_REFS:
            errors["citations"] = f"At most {MAX_SOURCE_REFS} citations."
        for cite in cites:
            try:
                Citation.parse(cite)
            except StoreError as exc:
                errors["citations"] = exc.message
                break
        return errors

    def _show_errors(self, errors: dict[str, str]) -> None:
        for name in ("title", "content", "tags", "citations"):
            label = self.query_one(f"#{name}-error", Static)
            label.update(errors.get(name, ""))
            label.set_class(name in errors, "visible")

    def _result(self) -> FormResult:
        r = self.record
        title, tags = self._text("title"), self._text("tags")
        scope = r.scope if r else self.query_one("#scope", Select).value
        return FormResult(
            record_type=self.query_one("#type", Select).value,  # type: ignore[arg-type]
            title=title if title == self._texts["title"].original else title.strip(),
            content=self._text("content"),
            tags=list(r.tags) if r and tags == self._texts["tags"].original else parse_tags(tags),
            scope=scope,  # type: ignore[arg-type]
            record_id=r.id if r else None,
            base_revision=self.base_revision,
            citations=self._citations(),
        )

    def _citations(self) -> list[str] | None:
        typed = parse_citations(self.query_one("#citations", Input).value)
        if self.record is not None and typed == parse_citations(citations_text(self.record)):
            return None  # unchanged: an edit keeps them (and their hashes) as they are
        return typed

    @on(Input.Changed)
    @on(TextArea.Changed)
    @on(Select.Changed)
    def _revalidate(self) -> None:
        self.edited()
        # Clear errors as the user fixes them; new errors only appear on save.
        errors = self._errors()
        for name in ("title", "content", "tags", "citations"):
            label = self.query_one(f"#{name}-error", Static)
            if name not in errors:
                label.update("")
                label.remove_class("visible")

    def action_cite_symbols(self) -> None:
        """Each line range of the citations that lies inside one function or class becomes
        that symbol (it follows the code when it moves); the note under the box says how
        many, or that none does."""
        box = self.query_one("#citations", Input)
        cites = parse_citations(box.value)
        symbol_for = self.symbol_for
        offered = [symbol_for(c) if symbol_for is not None else None for c in cites]
        count = sum(o is not None for o in offered)
        note = self.query_one("#citations-note", Static)
        if not count:
            note.update("No line range here lies inside one function or class.")
            return
        box.value = ", ".join(o or c for c, o in zip(cites, offered, strict=True))
        note.update(
            f"{count} line range{'s' if count != 1 else ''} now cite"
            f"{'s' if count == 1 else ''} the function or class holding "
            f"{'them' if count != 1 else 'it'}: it follows the code when it moves."
        )

    # ------------------------------------------------------------------ saving

    def action_save(self) -> None:
        if self._saving:  # a second write on the same revision would be refused as stale
            self.say("saving: this form's save waits its turn behind the writes before it")
            return
        errors = self._errors()
        self._show_errors(errors)
        if errors:
            first = next(iter(errors))
            self.query_one(f"#{first}").focus()
            return
        self.say("")
        self.saver(self._result(), self._saved, self._failed, self._queued)

    def _queued(self) -> None:
        self._saving = True

    def _saved(self, record_id: str) -> None:
        self._saving = False
        if self.is_attached and self.app.screen is self:
            self.dismiss(record_id)

    def _failed(self, error: StoreError) -> bool:
        """Show a refused save in the form (True); False when the form is gone."""
        self._saving = False
        if not self.is_attached:
            return False
        if isinstance(error, RevisionConflict) and self.record is not None:
            self._merge(error.newer)
        else:
            self.say(f"error[{error.code}]: {error.message}")
        return True

    @on(Button.Pressed, "#save")
    def _save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    def _all_values(self) -> tuple[object, ...]:
        """Every value the form shows, as typed (what escape would throw away)."""
        boxes = (self.query_one(f"#{name}") for name in (*TEXT_FIELDS, "citations"))
        typed = tuple(b.text if isinstance(b, TextArea) else b.value for b in boxes)  # type: ignore[attr-defined]
        selects = tuple(s.value for s in self.query(Select).results(Select))
        return typed + selects

    # ------------------------------------------------------------------ merging a conflict

    def _values(self) -> dict[str, str]:
        kind = self.query_one("#type", Select).value
        return {
            "type": kind.value if isinstance(kind, RecordType) else str(kind),
            "title": self._text("title"),
            "content": self._text("content"),
            "tags": self._text("tags"),
        }

    def _set_value(self, name: str, text: str) -> None:
        if name == "type":
            self.query_one("#type", Select).value = RecordType(text)
            return
        self._texts[name] = edited = self._edited(name, text)
        if name == "content":
            self.query_one("#content", TextArea).text = edited.shown
        else:
            self.query_one(f"#{name}", Input).value = edited.shown

    def _merge(self, newer: Record) -> None:
        """The other side saved ``newer`` while this form was open: the form now edits on top
        of it. Each field they changed gets a row with their diff and a choice; a field only
        they changed takes theirs (nothing of the reviewer's is lost), a field both changed
        keeps the reviewer's. Focus goes to the first choice (or Save), a visible control.
        """
        assert self.record is not None
        base, theirs, mine = field_texts(self.record), field_texts(newer), self._values()
        self.record, self.base_revision = newer, newer.governance.revision
        # Fields they changed, unless the reviewer typed the same.
        changed = [
            f
            for f in FIELDS
            if not _same(f, theirs[f], base[f]) and not _same(f, theirs[f], mine[f])
        ]
        self._mine, self._theirs = mine, theirs
        self.choices = {}
        for f in changed:
            if _same(f, mine[f], base[f]):
                self.choices[f] = "theirs"
                self._set_value(f, theirs[f])
            else:
                self.choices[f] = "mine"
        revision = newer.governance.revision
        self.query_one("#form-heading", Label).update(
            f"Edit {visible(newer.id)} (merging with revision {revision})"
        )
        self.say("")
        box = self.query_one("#merge", Vertical)
        box.query(".merge-row").remove()
        if changed:
            note = (
                f"Someone else saved revision {revision} while you edited. Your text is kept; "
                "below, each field they changed (- before, + theirs): keep yours or take "
                f"theirs, then Save writes revision {revision + 1}."
            )
        else:
            note = (
                f"Someone else saved revision {revision} while you edited (no field you edit "
                f"changed: {newer.status.value}, {newer.governance.verification.value}). Your "
                f"text is kept; Save writes revision {revision + 1}."
            )
        self.query_one("#merge-note", Static).update(note)
        rows = [self._merge_row(f, base[f], theirs[f]) for f in changed]
        box.remove_class("hidden")
        self.query_one(VerticalScroll).scroll_home(animate=False)
        if rows:
            # Focus the first choice once its row is really mounted (after a refresh it may not
            # be yet, under load: the focus was then lost and typed keys went nowhere).
            self.call_next(self._focus_when_mounted, box.mount_all(rows), rows[0])
        else:
            self.set_focus(self.query_one("#save", Button))

    async def _focus_when_mounted(self, mounted: Awaitable[object], row: Vertical) -> None:
        await mounted
        self.set_focus(row.query(".merge-choice").first(Button))

    def _merge_row(self, name: str, before: str, after: str) -> Vertical:
        chosen = self.choices[name]
        mine = Button("Keep mine", name=f"mine:{name}", classes=f"merge-choice -mine -{name}")
        theirs = Button(
            "Take theirs", name=f"theirs:{name}", classes=f"merge-choice -theirs -{name}"
        )
        mine.variant = "primary" if chosen == "mine" else "default"
        theirs.variant = "primary" if chosen == "theirs" else "default"
        label = Label(f"{FIELDS[name]}: changed by them", classes="merge-label", markup=False)
        return Vertical(
            Horizontal(label, mine, theirs, classes="merge-head"),
            Static(field_diff(name, before, after), classes="merge-diff", markup=False),
            classes="merge-row",
            name=name,
        )

    @on(Button.Pressed, ".merge-choice")
    def _choice_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        side, _, name = (event.button.name or "").partition(":")
        self.choose(name, side)
        self.set_focus(event.button)

    def choose(self, name: str, side: str) -> None:
        """Per field after a conflict: ``"mine"`` (the reviewer's text) or ``"theirs"``."""
        if name not in self.choices or self.choices[name] == side:
            return
        if side == "theirs":
            self._mine[name] = self._values()[name]  # what the reviewer has typed since, too
            self._set_value(name, self._theirs[name])
        else:
            self._set_value(name, self._mine[name])
        self.choices[name] = side
        for button in self.query(".merge-choice").results(Button):
            kind, _, field = (button.name or "").partition(":")
            if field == name:
                button.variant = "primary" if kind == side else "default"
