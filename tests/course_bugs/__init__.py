"""The course-bug corpus (tests/test_course_bugs.py): a package only so that its report.py has a
module name of its own beside tests/corpus/report.py."""
