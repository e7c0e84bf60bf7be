"""Mechanical Turk's batch results CSV, written the way MTurk's "Download CSV" writes it:
every cell quoted, MTurk's own columns first, then Input.<col> for each column of the
batch input, Answer.<field> for each field any page submitted (a field an assignment did
not submit is empty), then Approve and Reject."""
import csv
from typing import List, Mapping, Sequence

MTURK_COLUMNS = ("HITId", "HITTypeId", "Title", "Description", "Keywords", "Reward", "CreationTime",
                 "MaxAssignments", "RequesterAnnotation", "AssignmentDurationInSeconds",
                 "AutoApprovalDelayInSeconds", "Expiration", "NumberOfSimilarHITs", "LifetimeInSeconds",
                 "AssignmentId", "WorkerId", "AssignmentStatus", "AcceptTime", "SubmitTime",
                 "AutoApprovalTime", "ApprovalTime", "RejectionTime", "RequesterFeedback",
                 "WorkTimeInSeconds", "LifetimeApprovalRate", "Last30DaysApprovalRate",
                 "Last7DaysApprovalRate")


def assignment(n: int, worker: str, task_row: Mapping, answers: Mapping, status: str = "Submitted") -> dict:
    """One assignment: the HIT made of `task_row`, the fields its page submitted."""
    return {"HITId": f"3HIT{n:05d}EXAMPLE", "HITTypeId": "3TYPE0EXAMPLE", "Title": "A crowd round",
            "Description": "", "Keywords": "", "Reward": "$0.10", "CreationTime": "Sat Nov 28 09:00:00 PST 2026",
            "MaxAssignments": "3", "RequesterAnnotation": "BatchId:1;", "AssignmentDurationInSeconds": "3600",
            "AutoApprovalDelayInSeconds": "259200", "Expiration": "Sat Dec 05 09:00:00 PST 2026",
            "NumberOfSimilarHITs": "", "LifetimeInSeconds": "", "AssignmentId": f"3ASSIGN{n:05d}EXAMPLE",
            "WorkerId": worker, "AssignmentStatus": status, "AcceptTime": "Sat Nov 28 09:10:00 PST 2026",
            "SubmitTime": "Sat Nov 28 09:12:00 PST 2026", "AutoApprovalTime": "Tue Dec 01 09:12:00 PST 2026",
            "ApprovalTime": "", "RejectionTime": "", "RequesterFeedback": "", "WorkTimeInSeconds": "120",
            "LifetimeApprovalRate": "0% (0/0)", "Last30DaysApprovalRate": "0% (0/0)",
            "Last7DaysApprovalRate": "0% (0/0)",
            **{f"Input.{c}": _text(v) for c, v in task_row.items()},
            **{f"Answer.{c}": _text(v) for c, v in answers.items()}}


def _text(value) -> str:
    from transforms.crowd.task_files import csv_cell
    return csv_cell(value)


def write_results(path, assignments: Sequence[dict], input_columns: Sequence[str]) -> List[str]:
    """The results file of these assignments; returns its header."""
    answers = sorted({c for a in assignments for c in a if c.startswith("Answer.")})
    header = list(MTURK_COLUMNS) + [f"Input.{c}" for c in input_columns] + answers + ["Approve", "Reject"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        writer.writerow(header)
        for a in assignments:
            writer.writerow([a.get(c, "") for c in header])
    return header
