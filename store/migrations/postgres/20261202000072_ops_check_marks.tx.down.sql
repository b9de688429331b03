DROP TABLE ops_check_marks;
